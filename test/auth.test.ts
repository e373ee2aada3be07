import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootServer, useServer, type TestServer } from './helpers/server.js';
import { client, sessionCookie, signUp, uniqueEmail, type Client, type Reply } from './helpers/client.js';

const t = useServer();

describe('register, login, logout', () => {
  it('registers a user with a default workspace and an HttpOnly session cookie', async () => {
    const email = uniqueEmail();
    const res = await t.api.post('/v1/auth/register', {
      email: email.toUpperCase(),
      password: 'long enough pw',
      name: 'Ada',
    });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ email, name: 'Ada' });
    expect(res.body.user.id).toMatch(/^usr-[0-9a-v]{20}$/);
    expect(res.body.workspace).toMatchObject({ type: 'team', email });
    expect(res.body.workspace.id).toMatch(/^tea-[0-9a-v]{20}$/);
    expect(res.body.user).not.toHaveProperty('passwordHash');
    const setCookie = res.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Lax/);
    expect(setCookie).not.toMatch(/Secure/); // served over http here

    const me = await t.api.get('/v1/users', { cookie: sessionCookie(res) });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: res.body.user.id, email, name: 'Ada' });
  });

  it('refuses a second account with the same email (any case) with 409', async () => {
    const user = await signUp(t.api);
    const again = await t.api.post('/v1/auth/register', {
      email: user.email.toUpperCase(),
      password: 'another password',
      name: 'X',
    });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');
  });

  it('logs in with the right password, refuses a wrong one or an unknown email with 401', async () => {
    const user = await signUp(t.api);
    const ok = await t.api.post('/v1/auth/login', { email: user.email, password: user.password });
    expect(ok.status).toBe(200);
    expect(ok.body.user.id).toBe(user.id);
    const cookie = sessionCookie(ok);
    expect((await t.api.get('/v1/users', { cookie })).status).toBe(200);

    const wrong = await t.api.post('/v1/auth/login', { email: user.email, password: 'not the password' });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ code: 'unauthorized', message: 'wrong email or password' });
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const unknown = await t.api.post('/v1/auth/login', { email: uniqueEmail(), password: 'whatever pw' });
    expect(unknown.status).toBe(401);
    expect(unknown.body.message).toBe(wrong.body.message);
  });

  it('logout revokes the session server-side', async () => {
    const user = await signUp(t.api);
    expect((await t.api.post('/v1/auth/logout', undefined, { cookie: user.cookie })).status).toBe(204);
    const after = await t.api.get('/v1/users', { cookie: user.cookie });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('unauthorized');
  });

  it('answers 401 without credentials and with a forged cookie', async () => {
    expect((await t.api.get('/v1/users')).status).toBe(401);
    expect((await t.api.get('/v1/users', { cookie: 'forged-value' })).status).toBe(401);
  });

  it('lists no OAuth providers when none is configured, and their routes answer 501 naming the settings', async () => {
    const res = await t.api.get('/v1/auth/providers');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    for (const provider of ['github', 'google', 'apple']) {
      const start = await t.api.get(`/v1/auth/oauth/${provider}/start`);
      expect(start.status).toBe(501);
      expect(start.body).toMatchObject({ code: 'not_configured' });
      expect(start.body.message).toContain(`SLIPWAY_OAUTH_${provider.toUpperCase()}_CLIENT_ID`);
      expect((await t.api.get(`/v1/auth/oauth/${provider}/callback?code=x&state=y`)).status).toBe(501);
    }
    expect((await t.api.get('/v1/auth/oauth/myspace/start')).status).toBe(400);
  });

  it('validates register input: bad email, short password, missing name', async () => {
    const res = await t.api.post('/v1/auth/register', { email: 'not-an-email', password: 'short' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    const fields = res.body.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['email', 'password', 'name']));
  });
});

describe('CSRF on cookie-authenticated unsafe requests', () => {
  it('refuses a cross-site POST, accepts same-origin or a scripted header', async () => {
    const user = await signUp(t.api);
    const headers = { cookie: `slipway_session=${user.cookie}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ name: 'k' });
    const crossSite = await fetch(`${t.server.url}/v1/api-keys`, {
      method: 'POST',
      headers: { ...headers, origin: 'https://evil.example' },
      body,
    });
    expect(crossSite.status).toBe(403);
    const bare = await fetch(`${t.server.url}/v1/api-keys`, { method: 'POST', headers, body });
    expect(bare.status).toBe(403);
    const sameOrigin = await fetch(`${t.server.url}/v1/api-keys`, {
      method: 'POST',
      headers: { ...headers, origin: t.server.url },
      body,
    });
    expect(sameOrigin.status).toBe(201);
    const scripted = await fetch(`${t.server.url}/v1/api-keys`, {
      method: 'POST',
      headers: { ...headers, 'x-requested-with': 'fetch' },
      body,
    });
    expect(scripted.status).toBe(201);
  });
});

describe('brute-force limits on login', () => {
  it('limits attempts per account even when the IP limit allows more', async () => {
    const strict = await bootServer({ SLIPWAY_AUTH_ACCOUNT_ATTEMPTS_PER_10_MINUTES: '3' });
    try {
      const sApi = client(strict.url);
      const user = await signUp(sApi); // attempt 1 on this account
      const first = await sApi.post('/v1/auth/login', { email: user.email, password: 'wrong password' });
      const second = await sApi.post('/v1/auth/login', { email: user.email, password: 'wrong password' });
      expect([first.status, second.status]).toEqual([401, 401]);
      // Even the right password is refused now: the account is being guessed at.
      const limited = await sApi.post('/v1/auth/login', { email: user.email.toUpperCase(), password: user.password });
      expect(limited.status).toBe(429);
      expect(limited.body.code).toBe('rate_limited');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      // Another account from the same IP is unaffected.
      const other = await signUp(sApi);
      expect((await sApi.post('/v1/auth/login', { email: other.email, password: other.password })).status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('limits attempts per IP across accounts and sends RateLimit headers', async () => {
    const strict = await bootServer({ SLIPWAY_AUTH_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const sApi = client(strict.url);
      const replies = [];
      for (let i = 0; i < 4; i++)
        replies.push(await sApi.post('/v1/auth/login', { email: uniqueEmail(), password: 'wrong password' }));
      expect(replies.map((r) => r.status)).toEqual([401, 401, 401, 429]);
      expect(replies[0]!.headers.get('ratelimit-limit')).toBe('3');
      expect(replies[0]!.headers.get('ratelimit-remaining')).toBe('2');
      expect(replies[3]!.headers.get('retry-after')).toBeTruthy();
    } finally {
      await strict.close();
    }
  });
});

/** The device cookie a sign-in sets (OWASP's "device cookies"), as a Cookie header. */
function deviceCookie(reply: Reply): string {
  const match = /slipway_device=([^;]+)/.exec(reply.headers.get('set-cookie') ?? '');
  if (!match) throw new Error(`no device cookie in ${reply.status} ${reply.text}`);
  return `slipway_device=${match[1]}`;
}

const login = (api: Client, email: string, password: string, cookie?: string) =>
  api.post('/v1/auth/login', { email, password }, cookie ? { headers: { cookie } } : undefined);

// Issue 29: ten wrong logins from anyone kept the owner's right password out (429) for ten minutes, again and again.
describe('device cookies: a browser that signed in before is not locked out by guesses from elsewhere', () => {
  let strict: TestServer;
  let api: Client;
  beforeAll(async () => {
    strict = await bootServer({ SLIPWAY_AUTH_ACCOUNT_ATTEMPTS_PER_10_MINUTES: '3' });
    api = client(strict.url);
  }, 120_000);
  afterAll(() => strict?.close());

  it('signs the owner in from a known device while the account is locked to every other client', async () => {
    const email = uniqueEmail();
    const password = 'correct horse battery';
    const registered = await api.post('/v1/auth/register', { email, password, name: 'Owner' }); // attempt 1
    expect(registered.status).toBe(201);
    const device = deviceCookie(registered);
    const setCookie = registered.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/slipway_device=[^;]+; Path=\/v1\/auth; Expires=[^;]+; HttpOnly; SameSite=Strict/);
    const other = await signUp(api);
    const othersDevice = deviceCookie(await login(api, other.email, other.password));

    // Someone else guesses: the account locks for every client without its device cookie.
    expect((await login(api, email, 'wrong password')).status).toBe(401);
    expect((await login(api, email, 'wrong password')).status).toBe(401);
    const locked = await login(api, email, password);
    expect(locked.status).toBe(429);
    expect(locked.headers.get('set-cookie')).toBeNull();
    // Another account's device cookie, or a forged one, is no device of this account.
    expect((await login(api, email, password, othersDevice)).status).toBe(429);
    const middle = Math.floor(device.length / 2);
    const forged = device.slice(0, middle) + (device[middle] === 'A' ? 'B' : 'A') + device.slice(middle + 1);
    expect((await login(api, email, password, forged)).status).toBe(429);

    // The owner's browser signs in, and gets a new device cookie.
    const owner = await login(api, email.toUpperCase(), password, device);
    expect(owner.status).toBe(200);
    expect((await api.get('/v1/users', { cookie: sessionCookie(owner) })).body.email).toBe(email);
    expect(deviceCookie(owner)).not.toBe(device);
    // The lock still holds for everyone else.
    expect((await login(api, email, password)).status).toBe(429);
  });

  it('limits a known device by its own count: a stolen cookie buys a few guesses, and another device is not held', async () => {
    const user = await signUp(api);
    const laptop = deviceCookie(await login(api, user.email, user.password));
    const phone = deviceCookie(await login(api, user.email, user.password)); // the account's count is now spent
    const guesses = [];
    for (let i = 0; i < 4; i++) guesses.push((await login(api, user.email, 'wrong password', laptop)).status);
    expect(guesses).toEqual([401, 401, 401, 429]);
    const held = await login(api, user.email, user.password, laptop);
    expect(held.status).toBe(429);
    expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(60); // the device's 10-minute window
    expect((await login(api, user.email, user.password, phone)).status).toBe(200);
  });
});

describe('device cookies and the per-IP limit', () => {
  it('a known device is not held by the limit other clients at its address ran into', async () => {
    const strict = await bootServer({ SLIPWAY_AUTH_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const api = client(strict.url);
      const email = uniqueEmail();
      const password = 'correct horse battery';
      const device = deviceCookie(await api.post('/v1/auth/register', { email, password, name: 'Owner' }));
      const sprayed = [];
      for (let i = 0; i < 4; i++) sprayed.push((await login(api, uniqueEmail(), 'wrong password')).status);
      expect(sprayed).toEqual([401, 401, 401, 429]);
      expect((await login(api, email, password)).status).toBe(429);
      const owner = await login(api, email, password, device);
      expect(owner.status).toBe(200);
      expect(owner.headers.get('ratelimit-limit')).toBe('1000'); // the device's own count (the helper's setting)
    } finally {
      await strict.close();
    }
  }, 90_000);
});
