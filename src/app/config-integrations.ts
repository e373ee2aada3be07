import { readFileSync } from 'node:fs';
import type { GitHubAppConfig, HttpsSettings, OAuthSettings } from '../model/settings.js';

/** Settings of the third parties Slipway talks to (src/app/config.ts loads them): the GitHub App and sign-in providers. */
type Env = Record<string, string | undefined>;

const fileOrValue = (env: Env, name: string) => {
  const file = env[`${name}_FILE`];
  return env[name] || (file ? readFileSync(file, 'utf8') : undefined);
};
const urlOf = (env: Env, name: string, fallback: string) => (env[name] || fallback).replace(/\/+$/, '');

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
