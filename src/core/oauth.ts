import type { OAuthProvider } from '../model/settings.js';
import type { FlowChecks, ProviderIdentity, SignInProvider } from '../integrations/sign-in.js';
import { randomChecks } from '../integrations/sign-in.js';
import { AppError, badRequest, conflict, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { IdentityRepo, IdentityRow } from '../store/repos/identities.js';
import type { UserRepo, UserRow } from '../store/repos/users.js';
import { normalizeEmail, type Auth } from './auth.js';
import type { Team } from './team.js';
import { isUniqueViolation } from '../store/db.js';

const FLOW_TTL_MS = 10 * 60_000;
const NAMES: Record<OAuthProvider, string> = { github: 'GitHub', google: 'Google', apple: 'Apple' };
const SETTINGS: Record<OAuthProvider, string> = {
  github: 'SLIPWAY_OAUTH_GITHUB_CLIENT_ID and _CLIENT_SECRET',
  google: 'SLIPWAY_OAUTH_GOOGLE_CLIENT_ID and _CLIENT_SECRET',
  apple: 'SLIPWAY_OAUTH_APPLE_CLIENT_ID, _TEAM_ID, _KEY_ID and _PRIVATE_KEY',
};

/** What a sign-in carries from its start to its callback, sealed in a cookie of the browser that started it. */
interface Flow extends FlowChecks {
  provider: OAuthProvider;
  /** An invite token to accept once signed in. */
  invite?: string;
  /** Linking: the signed-in user the identity is added to. */
  linkTo?: string;
  expiresAt: number;
}

/**
 * Sign-in with GitHub, Google and Apple (docs/github-and-sign-in.md, "Sign in with GitHub, Google or Apple"): PKCE, state and nonce are
 * made at the start and kept sealed in a cookie bound to the browser; the callback checks them (the provider driver
 * validates the ID token) and signs in, links, or creates the account.
 */
export function createOAuth(deps: {
  providers: Partial<Record<OAuthProvider, SignInProvider>>;
  box: SecretBox;
  publicUrl: string;
  users: Pick<UserRepo, 'findByEmail' | 'get'>;
  identities: IdentityRepo;
  auth: Pick<Auth, 'registerWithIdentity' | 'signIn'>;
  team: Pick<Team, 'checkInvite' | 'accept'>;
  now?: () => number;
}) {
  const now = deps.now ?? Date.now;
  const redirectUri = (p: OAuthProvider) => `${deps.publicUrl}/v1/auth/oauth/${p}/callback`;
  const provider = (p: OAuthProvider) => {
    const found = deps.providers[p];
    if (!found) throw new AppError('not_configured', `sign-in with ${NAMES[p]} is not configured: set ${SETTINGS[p]}`);
    return found;
  };
  function openFlow(p: OAuthProvider, sealed: string | undefined): Flow {
    try {
      const flow = JSON.parse(deps.box.open(sealed ?? '')) as Flow;
      if (flow.provider === p && flow.expiresAt > now()) return flow;
    } catch {
      // no cookie, or one this Slipway did not seal
    }
    throw badRequest(`this sign-in with ${NAMES[p]} expired or was started in another browser: start again`);
  }
  /** The library's protocol errors (state, nonce, code, token) are the caller's 400; a provider out of reach a 503. */
  async function identityFrom(p: OAuthProvider, url: URL, flow: Flow): Promise<ProviderIdentity> {
    try {
      return await provider(p).finish(url, flow);
    } catch (err) {
      if (err instanceof AppError) throw err;
      // openid-client's message is generic ("invalid response encountered"); the cause and the provider's own
      // error say which check failed (state, nonce, an expired code's invalid_grant).
      const e = err as Error & { cause?: { message?: string }; error?: string; error_description?: string };
      const message = [e.message, e.cause?.message, e.error, e.error_description].filter(Boolean).join(': ');
      if (err instanceof TypeError && /fetch failed/.test(message))
        throw new AppError('unavailable', `${NAMES[p]} could not be reached; try again`);
      throw badRequest(`sign-in with ${NAMES[p]} failed: ${message}`);
    }
  }

  async function link(user: UserRow, p: OAuthProvider, who: ProviderIdentity) {
    const taken = () => conflict(`this ${NAMES[p]} account is linked to another user`);
    const held = await deps.identities.find(p, who.subject);
    if (held && held.user.id !== user.id) throw taken();
    if (held) return;
    await deps.identities
      .insert({
        id: newId('identity'),
        userId: user.id,
        provider: p,
        subject: who.subject,
        email: who.email ? normalizeEmail(who.email) : null,
        emailVerified: who.emailVerified,
      })
      .catch((err: unknown) => {
        throw isUniqueViolation(err) ? taken() : err; // a second callback for the same identity, at the same time
      });
  }

  /**
   * Whether the account's own email was proven by a provider (an identity that verified it). A password account's
   * email never was: anyone can register any address, so joining it on a provider's word would hand the account's
   * holder (maybe not the address's owner) the provider user's sign-in.
   */
  async function emailProven(user: UserRow) {
    return (await deps.identities.listOf(user.id)).some((i) => i.emailVerified && i.email === user.email);
  }

  return {
    /** The provider's authorization URL and the sealed flow for the browser's cookie. */
    async start(p: OAuthProvider, opts: { invite?: string; linkTo?: string } = {}) {
      const { codeChallenge, ...checks } = await randomChecks();
      const url = await provider(p)
        .authorizationUrl({ redirectUri: redirectUri(p), codeChallenge, ...checks })
        .catch((err: unknown) => {
          // Discovery failed: the provider (or the way to it) is down.
          throw new AppError('unavailable', `${NAMES[p]} could not be reached: ${(err as Error).message}; try again`);
        });
      const flow: Flow = { provider: p, ...checks, ...opts, expiresAt: now() + FLOW_TTL_MS };
      return { url, cookie: deps.box.seal(JSON.stringify(flow)), maxAgeSeconds: FLOW_TTL_MS / 1000 };
    },

    /** The callback: `params` from the query (GET) or the form body (Apple's form_post). */
    async finish(p: OAuthProvider, sealed: string | undefined, params: URLSearchParams) {
      provider(p);
      const flow = openFlow(p, sealed);
      const url = new URL(redirectUri(p));
      for (const [k, v] of params) url.searchParams.append(k, v);
      const who = await identityFrom(p, url, flow);

      if (flow.linkTo) {
        const user = await deps.users.get(flow.linkTo);
        if (!user) throw notFound('user');
        await link(user, p, who);
        return { user, session: await deps.auth.signIn(user), linked: true };
      }
      const held = await deps.identities.find(p, who.subject);
      let user = held?.user;
      if (!user) {
        if (!who.email) throw badRequest(`${NAMES[p]} did not share an email address: allow it and try again`);
        const email = normalizeEmail(who.email);
        const invite = flow.invite ? await deps.team.checkInvite(flow.invite, email) : undefined;
        const existing = await deps.users.findByEmail(email);
        if (!existing) {
          const name = who.name?.trim() || email.split('@')[0]!;
          const made = await deps.auth.registerWithIdentity({
            email,
            name,
            invite,
            identity: { provider: p, subject: who.subject, emailVerified: who.emailVerified },
          });
          return { user: made.user, session: made.session, linked: false };
        }
        // An account with this email exists: it is joined only on the provider's word that the address is verified,
        // and only when the account's own address was proven the same way.
        const signInFirst = `sign in to it, then link ${NAMES[p]} (GET /v1/auth/oauth/${p}/link)`;
        if (!who.emailVerified)
          throw conflict(
            `an account with ${email} exists, and ${NAMES[p]} does not say this address is verified: ${signInFirst}`,
          );
        if (!(await emailProven(existing)))
          throw conflict(`an account with ${email} exists, made with a password: ${signInFirst}`);
        await link(existing, p, who);
        if (invite) await deps.team.accept(invite, existing);
        user = existing;
      } else if (flow.invite) {
        // The invite is for the account's address, not whatever the provider says today.
        await deps.team.accept(await deps.team.checkInvite(flow.invite, user.email), user);
      }
      return { user, session: await deps.auth.signIn(user), linked: false };
    },

    identities: (user: UserRow): Promise<IdentityRow[]> => deps.identities.listOf(user.id),
    /** Unlinks one of the user's identities, unless it is their last way to sign in. */
    async unlink(user: UserRow, identityId: string) {
      const outcome = await deps.identities.unlink(user.id, identityId, { keepOne: !user.passwordHash });
      if (outcome === 'missing') throw notFound('identity');
      if (outcome === 'last') throw conflict('this is your only way to sign in: link another provider first');
    },
  };
}
export type OAuth = ReturnType<typeof createOAuth>;
