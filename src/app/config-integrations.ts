import { readFileSync } from 'node:fs';

/** Settings of the third parties Slipway talks to (src/app/config.ts loads them): the GitHub App and sign-in providers. */
type Env = Record<string, string | undefined>;

const fileOrValue = (env: Env, name: string) => {
  const file = env[`${name}_FILE`];
  return env[name] || (file ? readFileSync(file, 'utf8') : undefined);
};
const urlOf = (env: Env, name: string, fallback: string) => (env[name] || fallback).replace(/\/+$/, '');

export interface GitHubAppConfig {
  appId: string;
  /** The App's URL name: its installation page is `<webUrl>/apps/<slug>/installations/new`. */
  slug: string;
  /** PEM (PKCS#1 as GitHub hands it out, or PKCS#8); never logged. */
  privateKey: string;
  webhookSecret: string;
  /**
   * The App's OAuth client: GitHub's setup callback carries a user's code (the App asks for user authorization
   * during installation), which proves the installation is that user's to link.
   */
  clientId: string;
  clientSecret: string;
  /** github.com's, or GitHub Enterprise's (`https://ghe.example.com/api/v3`). */
  apiUrl: string;
  webUrl: string;
}
/** What the GitHub App needs, for the 501 that names what is missing. */
export const GITHUB_APP_SETTINGS = [
  'SLIPWAY_GITHUB_APP_ID',
  'SLIPWAY_GITHUB_APP_SLUG',
  'SLIPWAY_GITHUB_APP_PRIVATE_KEY (or SLIPWAY_GITHUB_APP_PRIVATE_KEY_FILE)',
  'SLIPWAY_GITHUB_WEBHOOK_SECRET',
  'SLIPWAY_GITHUB_APP_CLIENT_ID',
  'SLIPWAY_GITHUB_APP_CLIENT_SECRET',
];

export function githubApp(env: Env): GitHubAppConfig | undefined {
  const privateKey = fileOrValue(env, 'SLIPWAY_GITHUB_APP_PRIVATE_KEY');
  const appId = env.SLIPWAY_GITHUB_APP_ID;
  const slug = env.SLIPWAY_GITHUB_APP_SLUG;
  const webhookSecret = env.SLIPWAY_GITHUB_WEBHOOK_SECRET;
  const clientId = env.SLIPWAY_GITHUB_APP_CLIENT_ID;
  const clientSecret = env.SLIPWAY_GITHUB_APP_CLIENT_SECRET;
  if (!appId || !slug || !privateKey || !webhookSecret || !clientId || !clientSecret) return undefined;
  return {
    appId,
    slug,
    privateKey,
    webhookSecret,
    clientId,
    clientSecret,
    apiUrl: urlOf(env, 'SLIPWAY_GITHUB_API_URL', 'https://api.github.com'),
    webUrl: urlOf(env, 'SLIPWAY_GITHUB_WEB_URL', 'https://github.com'),
  };
}

export const OAUTH_PROVIDERS = ['github', 'google', 'apple'] as const;
export type OAuthProvider = (typeof OAUTH_PROVIDERS)[number];

/** GitHub's OAuth web flow (not OIDC): its authorize and token pages on `webUrl`, the user from `apiUrl`. */
export interface GitHubOAuthConfig {
  clientId: string;
  clientSecret: string;
  webUrl: string;
  apiUrl: string;
}
/** An OpenID Connect provider found by discovery at `issuer`. */
export interface OidcConfig {
  clientId: string;
  clientSecret: string;
  issuer: string;
}
/** Sign in with Apple: the client secret is an ES256 JWT Slipway makes from the team id, key id and private key. */
export interface AppleConfig {
  clientId: string;
  teamId: string;
  keyId: string;
  /** The `.p8` key (PKCS#8 PEM); never logged. */
  privateKey: string;
  issuer: string;
}
export interface OAuthSettings {
  github?: GitHubOAuthConfig;
  google?: OidcConfig;
  apple?: AppleConfig;
}

/** `SLIPWAY_OAUTH_<PROVIDER>_*`: a provider missing any setting is off (and not listed). */
export function oauthSettings(env: Env): OAuthSettings {
  const get = (p: string, name: string) => env[`SLIPWAY_OAUTH_${p}_${name}`] || undefined;
  const out: OAuthSettings = {};
  const ghId = get('GITHUB', 'CLIENT_ID');
  const ghSecret = get('GITHUB', 'CLIENT_SECRET');
  if (ghId && ghSecret)
    out.github = {
      clientId: ghId,
      clientSecret: ghSecret,
      webUrl: urlOf(env, 'SLIPWAY_OAUTH_GITHUB_WEB_URL', urlOf(env, 'SLIPWAY_GITHUB_WEB_URL', 'https://github.com')),
      apiUrl: urlOf(
        env,
        'SLIPWAY_OAUTH_GITHUB_API_URL',
        urlOf(env, 'SLIPWAY_GITHUB_API_URL', 'https://api.github.com'),
      ),
    };
  const gId = get('GOOGLE', 'CLIENT_ID');
  const gSecret = get('GOOGLE', 'CLIENT_SECRET');
  if (gId && gSecret)
    out.google = {
      clientId: gId,
      clientSecret: gSecret,
      issuer: urlOf(env, 'SLIPWAY_OAUTH_GOOGLE_ISSUER', 'https://accounts.google.com'),
    };
  const aId = get('APPLE', 'CLIENT_ID');
  const teamId = get('APPLE', 'TEAM_ID');
  const keyId = get('APPLE', 'KEY_ID');
  const privateKey = fileOrValue(env, 'SLIPWAY_OAUTH_APPLE_PRIVATE_KEY');
  if (aId && teamId && keyId && privateKey)
    out.apple = {
      clientId: aId,
      teamId,
      keyId,
      privateKey,
      issuer: urlOf(env, 'SLIPWAY_OAUTH_APPLE_ISSUER', 'https://appleid.apple.com'),
    };
  return out;
}

/** The router's HTTPS and the ACME server its custom domains' certificates come from. */
export interface HttpsSettings {
  /** The HTTPS listener's port (0: any free one); undefined: no HTTPS listener (`off`). */
  port: number | undefined;
  /** The port HTTP→HTTPS redirects name when it differs from the listener's (443 forwarded to 8443). */
  redirectPort: number | undefined;
  /** The apps domain's certificate (a wildcard); unset: a self-signed one made once. */
  certFile: string | undefined;
  keyFile: string | undefined;
  acme?: {
    directoryUrl: string;
    email: string | undefined;
    /** PEM trusted for the ACME server's own TLS (SLIPWAY_ACME_CA_BUNDLE names the file). */
    caBundle: string | undefined;
    /** Renewal starts this long before expiry, or at two thirds of a short lifetime. */
    renewBeforeMs: number;
  };
}

const portOf = (value: string | undefined, name: string, fallback: number | undefined) => {
  if (value === undefined || value === '') return fallback;
  if (value === 'off') return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`${name} must be a port number or "off"`);
  return port;
};

export function httpsSettings(env: Env): HttpsSettings {
  const directoryUrl = env.SLIPWAY_ACME_DIRECTORY_URL;
  const renewDays = Number(env.SLIPWAY_ACME_RENEW_BEFORE_DAYS || 30);
  if (!(renewDays > 0)) throw new Error('SLIPWAY_ACME_RENEW_BEFORE_DAYS must be a positive number of days');
  return {
    port: portOf(env.SLIPWAY_ROUTER_HTTPS_PORT, 'SLIPWAY_ROUTER_HTTPS_PORT', 8443),
    redirectPort: portOf(env.SLIPWAY_ROUTER_HTTPS_REDIRECT_PORT, 'SLIPWAY_ROUTER_HTTPS_REDIRECT_PORT', undefined),
    certFile: env.SLIPWAY_ROUTER_TLS_CERT || undefined,
    keyFile: env.SLIPWAY_ROUTER_TLS_KEY || undefined,
    ...(directoryUrl
      ? {
          acme: {
            directoryUrl,
            email: env.SLIPWAY_ACME_EMAIL || undefined,
            caBundle: env.SLIPWAY_ACME_CA_BUNDLE ? readFileSync(env.SLIPWAY_ACME_CA_BUNDLE, 'utf8') : undefined,
            renewBeforeMs: renewDays * 86_400_000,
          },
        }
      : {}),
  };
}
