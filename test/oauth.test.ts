/**
 * Sign-in with Google and Apple against a real OpenID provider on loopback (oidc-provider: JWKS-signed ID tokens,
 * PKCE, state, nonce; the Apple-like one with form_post and Apple's ES256 client-secret JWT), and with GitHub's
 * OAuth web flow against the fake GitHub. Each flow is driven as a browser would: redirects, cookies, a form_post page.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signUp, uniqueEmail, type Client } from './helpers/client.js';
import { startFakeGitHub, type FakeGitHub } from './helpers/fake-github.js';
import { browser, startFakeIdp, type Account, type FakeIdp } from './helpers/fake-idp.js';
import { freePort } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let api: Client;
let base: string;
let google: FakeIdp;
let apple: FakeIdp;
let gh: FakeGitHub;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  google = await startFakeIdp('google', `${base}/v1/auth/oauth/google/callback`);
  apple = await startFakeIdp('apple', `${base}/v1/auth/oauth/apple/callback`);
  gh = await startFakeGitHub('/nonexistent');
  server = await bootServer({
    SLIPWAY_PORT: String(port),
    SLIPWAY_PUBLIC_URL: base,
    SLIPWAY_OAUTH_GOOGLE_CLIENT_ID: google.clientId,
    SLIPWAY_OAUTH_GOOGLE_CLIENT_SECRET: google.clientSecret!,
    SLIPWAY_OAUTH_GOOGLE_ISSUER: google.issuer,
    SLIPWAY_OAUTH_APPLE_CLIENT_ID: apple.clientId,
    SLIPWAY_OAUTH_APPLE_TEAM_ID: apple.apple!.teamId,
    SLIPWAY_OAUTH_APPLE_KEY_ID: apple.apple!.keyId,
    SLIPWAY_OAUTH_APPLE_PRIVATE_KEY: apple.apple!.privateKey,
    SLIPWAY_OAUTH_APPLE_ISSUER: apple.issuer,
    SLIPWAY_OAUTH_GITHUB_CLIENT_ID: gh.oauth.clientId,
    SLIPWAY_OAUTH_GITHUB_CLIENT_SECRET: gh.oauth.clientSecret,
    SLIPWAY_OAUTH_GITHUB_WEB_URL: gh.url,
    SLIPWAY_OAUTH_GITHUB_API_URL: gh.apiUrl,
  });
  api = client(server.url);
});
afterAll(async () => {
  await server?.close();
  await Promise.all([google?.close(), apple?.close(), gh?.close()]);
});

const account = (over: Partial<Account> = {}): Account => ({
  sub: `sub-${randomBytes(6).toString('hex')}`,
  email: uniqueEmail('oauth'),
  emailVerified: true,
  name: 'Ada Lovelace',
  ...over,
});
type Provider = 'google' | 'apple' | 'github';

/**
 * One sign-in as a browser: start (or `link` with a session), the provider's pages, then the callback, where `tamper`
 * may change what is sent. `rewrite` changes the authorization request on its way to the provider.
 */
async function signIn(
  provider: Provider,
  opts: {
    session?: string;
    path?: string;
    rewrite?: (url: URL) => void;
    tamper?: (url: URL, init: RequestInit) => void;
    beforeCallback?: () => Promise<void>;
  } = {},
) {
  const b = browser();
  if (opts.session) b.jar.set(new URL(base).host, new Map([['slipway_session', opts.session]]));
  const start = new URL(`${base}/v1/auth/oauth/${provider}/${opts.path ?? 'start'}`);
  const first = await b.request(start, opts.session ? { headers: { 'x-requested-with': 'test' } } : {});
  if (first.status !== 302) return { res: first, b };
  const toProvider = new URL(first.headers.get('location')!);
  opts.rewrite?.(toProvider);
  const stopped = await b.follow(toProvider, new URL(`${base}/v1/auth/oauth/${provider}/callback`));
  opts.tamper?.(stopped.url, stopped.init);
  await opts.beforeCallback?.();
  const res = await b.request(stopped.url, stopped.init);
  return { res, b, callback: stopped };
}
const sessionOf = (b: ReturnType<typeof browser>) => b.cookie(new URL(base).host, 'slipway_session');
const me = async (session: string) => (await api.get('/v1/users', { cookie: session })).body;
const identities = async (session: string) => (await api.get('/v1/auth/identities', { cookie: session })).body;

describe('sign-in with OpenID providers', () => {
  it('lists exactly the configured providers', async () => {
    expect((await api.get('/v1/auth/providers')).body.map((p: { id: string }) => p.id).sort()).toEqual([
      'apple',
      'github',
      'google',
    ]);
  });

  it('creates an account on a first Google sign-in, signs the same account in again, and ends at the public URL', async () => {
    const who = account();
    google.signInAs(who);
    const { res, b } = await signIn('google');
    expect(res.status, await res.clone().text()).toBe(302);
    expect(res.headers.get('location')).toBe(base);
    const session = sessionOf(b)!;
    expect(session).toBeDefined();
    expect((await me(session)).email).toBe(who.email);
    const ids = await identities(session);
    expect(ids).toMatchObject([{ provider: 'google', email: who.email }]);

    const again = await signIn('google');
    expect(again.res.status).toBe(302);
    expect((await me(sessionOf(again.b)!)).id).toBe((await me(session)).id);
    // An OAuth-only account has no password: password sign-in fails, and its only identity cannot be unlinked.
    expect((await api.post('/v1/auth/login', { email: who.email, password: 'whatever-it-is' })).status).toBe(401);
    const last = await api.delete(`/v1/auth/identities/${ids[0].id}`, { cookie: session });
    expect(last.status).toBe(409);
  });

  it('refuses a bad state, a bad nonce, an expired code, and a callback used twice (400), changing nothing', async () => {
    const who = account();
    google.signInAs(who);
    const badState = await signIn('google', { tamper: (url) => url.searchParams.set('state', 'forged') });
    expect(badState.res.status).toBe(400);
    const badStateText = await badState.res.text();
    expect(badStateText, badStateText).toMatch(/state/);

    const badNonce = await signIn('google', { rewrite: (url) => url.searchParams.set('nonce', 'someone-elses') });
    expect(badNonce.res.status).toBe(400);
    expect(await badNonce.res.text()).toMatch(/nonce/);

    google.codeTtlSeconds = 1;
    try {
      const expired = await signIn('google', { beforeCallback: () => new Promise((r) => setTimeout(r, 2100)) });
      expect(expired.res.status).toBe(400);
      expect(await expired.res.text()).toMatch(/invalid_grant|expired|grant/i);
    } finally {
      google.codeTtlSeconds = 60;
    }

    // None of the refused attempts made an account: the address is still free to register.
    const free = await api.post('/v1/auth/register', { email: who.email, password: 'long enough pw', name: 'x' });
    expect(free.status).toBe(201);

    google.signInAs(account());
    const used = await signIn('google');
    expect(used.res.status).toBe(302);
    const replay = await used.b.request(used.callback!.url, used.callback!.init);
    expect(replay.status).toBe(400);
  });

  it('links a verified email to an account whose email a provider proved; 409 for an unverified one or a password account', async () => {
    // An account Google made for a verified address.
    const who = account();
    google.signInAs(who);
    const made = await signIn('google');
    expect(made.res.status).toBe(302);
    const session = sessionOf(made.b)!;
    const userId = (await me(session)).id;

    // Apple (form_post, ES256 client secret, "true" as a string) vouches for the same address: linked.
    apple.signInAs(account({ email: who.email, emailVerified: true }));
    const { res, b, callback } = await signIn('apple');
    expect(callback!.init.method).toBe('POST'); // the provider answered with a form_post page
    expect(res.status, await res.clone().text()).toBe(302);
    expect((await me(sessionOf(b)!)).id).toBe(userId);
    expect((await identities(session)).map((i: { provider: string }) => i.provider).sort()).toEqual([
      'apple',
      'google',
    ]);

    // GitHub does not say the address is verified: 409, nothing linked.
    gh.oauthUser.id = 9000 + Math.floor(Math.random() * 1000);
    gh.oauthUser.emails = [{ email: who.email, primary: true, verified: false }];
    const unverified = await signIn('github');
    expect(unverified.res.status).toBe(409);
    expect(await unverified.res.text()).toMatch(/verified/);
    expect(await identities(session)).toHaveLength(2);

    // A password account: anyone could have registered the address, so a provider's word does not join it.
    const existing = await signUp(api);
    google.signInAs(account({ email: existing.email, emailVerified: true }));
    const refused = await signIn('google');
    expect(refused.res.status).toBe(409);
    expect(await refused.res.text()).toMatch(/password/);
    expect(await identities(existing.cookie)).toEqual([]);
    // Signed in to it, its holder links Google themselves.
    const linked = await signIn('google', { path: 'link', session: existing.cookie });
    expect(linked.res.status).toBe(302);
    expect((await identities(existing.cookie)).map((i: { provider: string }) => i.provider)).toEqual(['google']);
  });

  it('makes a new account for an address no account has, verified or not', async () => {
    apple.signInAs(account({ email: uniqueEmail('apple-unverified'), emailVerified: false }));
    expect((await signIn('apple')).res.status).toBe(302);
  });

  it('carries an invite through the flow into the invited workspace', async () => {
    const owner = await signUp(api);
    const who = account();
    const invite = await api.post('/v1/team-invites', { email: who.email, role: 'developer' }, owner);
    expect(invite.status).toBe(201);
    google.signInAs(who);
    const { res, b } = await signIn('google', { path: `start?inviteToken=${invite.body.token}` });
    expect(res.status).toBe(302);
    const workspaces = await api.get('/v1/workspaces', { cookie: sessionOf(b)! });
    expect(workspaces.body.map((w: { owner: { id: string } }) => w.owner.id)).toContain(owner.workspaceId);
  });
});

describe('sign-in with GitHub', () => {
  it('signs in by the OAuth web flow with PKCE, links and unlinks identities, never the last one', async () => {
    const email = uniqueEmail('octo');
    gh.oauthUser.id = 8000 + Math.floor(Math.random() * 1000);
    gh.oauthUser.emails = [{ email, primary: true, verified: true }];
    const first = await signIn('github');
    expect(first.res.status, await first.res.clone().text()).toBe(302);
    const session = sessionOf(first.b)!;
    expect((await me(session)).email).toBe(email);

    // Link Google to this GitHub-only account, then unlink GitHub: Google is left, and cannot go.
    google.signInAs(account());
    const link = await signIn('google', { path: 'link', session });
    expect(link.res.status, await link.res.clone().text()).toBe(302);
    const both = await identities(session);
    expect(both.map((i: { provider: string }) => i.provider).sort()).toEqual(['github', 'google']);
    const githubId = both.find((i: { provider: string }) => i.provider === 'github').id;
    expect(
      (await api.delete(`/v1/auth/identities/${githubId}`, { cookie: session, headers: { 'x-requested-with': 't' } }))
        .status,
    ).toBe(204);
    const left = await identities(session);
    expect(left).toHaveLength(1);
    expect((await api.delete(`/v1/auth/identities/${left[0].id}`, { cookie: session })).status).toBe(409);
    // Another user's identity is not yours to unlink.
    const other = await signUp(api);
    expect((await api.delete(`/v1/auth/identities/${left[0].id}`, other)).status).toBe(404);

    // An unverified GitHub email that matches an account: 409, nothing linked.
    const existing = await signUp(api);
    gh.oauthUser.id += 1;
    gh.oauthUser.emails = [{ email: existing.email, primary: true, verified: false }];
    expect((await signIn('github')).res.status).toBe(409);
    expect(await identities(existing.cookie)).toEqual([]);
  });
});
