import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import * as oidc from 'openid-client';
import type { AppleConfig, GitHubOAuthConfig, OAuthProvider, OAuthSettings, OidcConfig } from '../model/settings.js';

/** Who signed in, as the provider vouches for it. */
export interface ProviderIdentity {
  /** The provider's stable account id (`sub`; GitHub's numeric user id). */
  subject: string;
  email?: string;
  /** Whether the provider says the email address is verified. */
  emailVerified: boolean;
  name?: string;
}
export interface FlowChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The sign-in port: core sees only this, never openid-client. */
export interface SignInProvider {
  authorizationUrl(input: {
    redirectUri: string;
    state: string;
    nonce: string;
    codeChallenge: string;
  }): Promise<string>;
  /**
   * The callback (its URL with the response's parameters, query or form_post): checks `state`, redeems the code with
   * the PKCE verifier and, for OpenID providers, validates the ID token (signature by the issuer's JWKS, issuer,
   * audience, expiry, nonce). Throws what the library throws.
   */
  finish(callbackUrl: URL, checks: FlowChecks): Promise<ProviderIdentity>;
}

/** Tests and private deployments run providers on http://; production issuers are https only. */
const allowHttp = (config: oidc.Configuration, url: string) => {
  if (url.startsWith('http:')) oidc.allowInsecureRequests(config);
  return config;
};
const verified = (v: unknown) => v === true || v === 'true'; // Apple sends "true" as a string

/**
 * An OpenID Connect provider by discovery (Google; Apple with form_post and an ES256 client-secret JWT). The
 * metadata is fetched once; the client's authentication is made per use (Apple's secret expires).
 */
function openIdProvider(
  cfg: OidcConfig | AppleConfig,
  opts: { scope: string; formPost: boolean; secret: () => Promise<string> },
): SignInProvider {
  let metadata: Promise<oidc.ServerMetadata> | undefined;
  async function configuration() {
    metadata ??= oidc
      .discovery(new URL(cfg.issuer), cfg.clientId, undefined, oidc.None(), {
        execute: cfg.issuer.startsWith('http:') ? [oidc.allowInsecureRequests] : [],
      })
      .then((c) => c.serverMetadata())
      .catch((err: unknown) => {
        metadata = undefined; // try again next time
        throw err;
      });
    const config = new oidc.Configuration(
      await metadata,
      cfg.clientId,
      undefined,
      oidc.ClientSecretPost(await opts.secret()),
    );
    return allowHttp(config, cfg.issuer);
  }
  return {
    async authorizationUrl(input) {
      return oidc
        .buildAuthorizationUrl(await configuration(), {
          redirect_uri: input.redirectUri,
          scope: opts.scope,
          state: input.state,
          nonce: input.nonce,
          code_challenge: input.codeChallenge,
          code_challenge_method: 'S256',
          ...(opts.formPost ? { response_mode: 'form_post' } : {}),
        })
        .toString();
    },
    async finish(callbackUrl, checks) {
      const tokens = await oidc.authorizationCodeGrant(await configuration(), callbackUrl, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims()!;
      return {
        subject: claims.sub,
        email: typeof claims.email === 'string' ? claims.email : undefined,
        emailVerified: verified(claims.email_verified),
        name: typeof claims.name === 'string' ? claims.name : undefined,
      };
    },
  };
}

/** Apple's client secret: an ES256 JWT signed with the team's key, for Apple's audience (its issuer). */
function appleSecret(cfg: AppleConfig) {
  const key = createPrivateKey(cfg.privateKey);
  return () =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: cfg.keyId })
      .setIssuer(cfg.teamId)
      .setSubject(cfg.clientId)
      .setAudience(cfg.issuer)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key);
}

/** GitHub's OAuth web flow (GitHub is not an OpenID provider): PKCE and state, then the user and its emails. */
function githubProvider(cfg: GitHubOAuthConfig): SignInProvider {
  const server: oidc.ServerMetadata = {
    issuer: cfg.webUrl,
    authorization_endpoint: `${cfg.webUrl}/login/oauth/authorize`,
    token_endpoint: `${cfg.webUrl}/login/oauth/access_token`,
  };
  const config = allowHttp(
    new oidc.Configuration(server, cfg.clientId, undefined, oidc.ClientSecretPost(cfg.clientSecret)),
    cfg.webUrl,
  );
  const api = async <T>(path: string, token: string): Promise<T> => {
    const res = await fetch(`${cfg.apiUrl}${path}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json' },
      signal: AbortSignal.timeout(15_000),
    });
    if (!res.ok) throw new Error(`GitHub answered ${res.status} to GET ${path}`);
    return (await res.json()) as T;
  };
  return {
    async authorizationUrl(input) {
      return oidc
        .buildAuthorizationUrl(config, {
          redirect_uri: input.redirectUri,
          scope: 'read:user user:email',
          state: input.state,
          code_challenge: input.codeChallenge,
          code_challenge_method: 'S256',
        })
        .toString();
    },
    async finish(callbackUrl, checks) {
      const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
      });
      const user = await api<{ id: number; login: string; name?: string | null }>('/user', tokens.access_token);
      const emails = await api<Array<{ email: string; primary: boolean; verified: boolean }>>(
        '/user/emails',
        tokens.access_token,
      );
      const primary = emails.find((e) => e.primary) ?? emails[0];
      return {
        subject: String(user.id),
        email: primary?.email,
        emailVerified: primary?.verified === true,
        name: user.name || user.login,
      };
    },
  };
}

/** The configured providers (only fully configured ones). */
export function createSignInProviders(settings: OAuthSettings): Partial<Record<OAuthProvider, SignInProvider>> {
  const out: Partial<Record<OAuthProvider, SignInProvider>> = {};
  if (settings.github) out.github = githubProvider(settings.github);
  if (settings.google) {
    const secret = settings.google.clientSecret;
    out.google = openIdProvider(settings.google, {
      scope: 'openid email profile',
      formPost: false,
      secret: async () => secret,
    });
  }
  if (settings.apple)
    out.apple = openIdProvider(settings.apple, {
      scope: 'openid email name',
      formPost: true,
      secret: appleSecret(settings.apple),
    });
  return out;
}

export const randomChecks = async () => {
  const codeVerifier = oidc.randomPKCECodeVerifier();
  return {
    state: oidc.randomState(),
    nonce: oidc.randomNonce(),
    codeVerifier,
    codeChallenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
  };
};
