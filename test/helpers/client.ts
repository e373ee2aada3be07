import { randomBytes } from 'node:crypto';

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface Caller {
  /** Bearer token (API key or operator token). */
  token?: string;
  /** Session cookie value. */
  cookie?: string;
}

/** HTTP against a running server, as a client would: JSON in, JSON out, credentials attached. */
export function client(baseUrl: string) {
  async function call<T = any>(
    method: string,
    path: string,
    opts: Caller & { body?: unknown; raw?: string | Uint8Array; headers?: Record<string, string> } = {},
  ): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.cookie) {
      headers.cookie = `slipway_session=${opts.cookie}`;
      headers['x-requested-with'] ??= 'test'; // passes the CSRF check, as a script would
    }
    let body: string | Uint8Array | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    // Redirects are answers to check (GitHub's install link), not to follow.
    const res = await fetch(baseUrl + path, {
      method,
      headers,
      body: body as BodyInit | undefined,
      redirect: 'manual',
    });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }
  return {
    call,
    get: <T = any>(path: string, opts?: Caller & { headers?: Record<string, string> }) => call<T>('GET', path, opts),
    post: <T = any>(path: string, body?: unknown, opts?: Caller & { headers?: Record<string, string> }) =>
      call<T>('POST', path, { ...opts, body }),
    patch: <T = any>(path: string, body?: unknown, opts?: Caller & { headers?: Record<string, string> }) =>
      call<T>('PATCH', path, { ...opts, body }),
    put: <T = any>(path: string, body?: unknown, opts?: Caller & { headers?: Record<string, string> }) =>
      call<T>('PUT', path, { ...opts, body }),
    delete: <T = any>(path: string, opts?: Caller & { headers?: Record<string, string> }) =>
      call<T>('DELETE', path, opts),
  };
}
export type Client = ReturnType<typeof client>;

export const uniqueEmail = (tag = 'user') => `${tag}-${randomBytes(5).toString('hex')}@example.com`;

export function sessionCookie(reply: Reply): string {
  const setCookie = reply.headers.get('set-cookie') ?? '';
  const match = /slipway_session=([^;]+)/.exec(setCookie);
  if (!match) throw new Error(`no session cookie in ${reply.status} ${reply.text}`);
  return match[1]!;
}

export interface TestUser {
  id: string;
  email: string;
  password: string;
  workspaceId: string;
  cookie: string;
}

/** Registers a fresh user; returns its ids and session cookie. */
export async function signUp(
  api: Client,
  opts: { email?: string; name?: string; inviteToken?: string } = {},
): Promise<TestUser> {
  const email = opts.email ?? uniqueEmail();
  const password = 'correct horse battery';
  const res = await api.post('/v1/auth/register', {
    email,
    password,
    name: opts.name ?? 'Test User',
    inviteToken: opts.inviteToken,
  });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`);
  return { id: res.body.user.id, email, password, workspaceId: res.body.workspace.id, cookie: sessionCookie(res) };
}

/** Creates an API key for `user` in its default workspace; returns the token. */
export async function createApiKey(
  api: Client,
  user: Caller,
  name = 'test key',
): Promise<{ id: string; token: string }> {
  const res = await api.post('/v1/api-keys', { name }, user);
  if (res.status !== 201) throw new Error(`api key failed: ${res.status} ${res.text}`);
  return { id: res.body.id, token: res.body.token };
}

/** Invites `email` into `owner`'s workspace with `role` and has that user accept; returns the member. */
export async function addMember(
  api: Client,
  owner: TestUser,
  role: 'admin' | 'developer' | 'viewer',
): Promise<TestUser> {
  const email = uniqueEmail(role);
  const invite = await api.post('/v1/team-invites', { email, role }, owner);
  if (invite.status !== 201) throw new Error(`invite failed: ${invite.status} ${invite.text}`);
  return signUp(api, { email, inviteToken: invite.body.token });
}
