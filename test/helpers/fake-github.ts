/**
 * A faithful fake of the part of GitHub Slipway uses, behind the real Octokit clients: the App's RS256 JWT checked
 * with the App's public key (issuer, issued-at, expiry at most 10 minutes), installation tokens that expire,
 * `GET /installation/repositories` paginated with `Link` headers, commit statuses recorded, and the repositories
 * themselves served by the real `git http-backend` to a current installation token only (HTTP Basic, as git sends
 * it). GitHub is third-party SaaS; this is the only thing faked.
 */
import { createHash, createHmac, createVerify, generateKeyPairSync, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveGitHttp } from './git-http.js';

type Obj = Record<string, any>;

export interface FakeGitHub {
  /** The web host (installation page, repositories); the API is under `/api`. */
  url: string;
  apiUrl: string;
  appId: string;
  slug: string;
  /** PKCS#1 PEM, as GitHub hands App keys out. */
  privateKey: string;
  webhookSecret: string;
  /** Every request: method, path with query, and its Authorization header's scheme. */
  requests: Array<{ method: string; url: string; auth?: string }>;
  /** Every installation token issued. */
  tokens: string[];
  statuses: Obj[];
  /** Adds an installation on `account` reaching `repos` (`name` under `<root>/<account>/<name>.git`). */
  addInstallation(id: number, account: string, repos: string[]): void;
  /** Slipway's settings for this App (SLIPWAY_GITHUB_*). */
  appEnv(): Record<string, string>;
  /** The App's own OAuth client (user authorization during installation). */
  appClient: { clientId: string; clientSecret: string };
  /**
   * The `code` GitHub appends to the App's setup URL after an installation, for a user who can reach `installations`.
   */
  installCode(installations: number[]): string;
  /** GitHub's OAuth app (sign-in): its client, and the user who signs in next. */
  oauth: { clientId: string; clientSecret: string };
  oauthUser: {
    id: number;
    login: string;
    name: string;
    emails: Array<{ email: string; primary: boolean; verified: boolean }>;
  };
  /** A webhook delivery as GitHub sends it; returns its delivery id. */
  deliver(
    slipwayUrl: string,
    event: string,
    payload: Obj,
    opts?: { deliveryId?: string; secret?: string },
  ): Promise<{ status: number; body: any; deliveryId: string }>;
  close(): Promise<void>;
}

/** Repositories per page, whatever `per_page` asks: small, so Slipway must follow `Link`. */
const PAGE_SIZE = 2;
/** GitHub's installation tokens live an hour. */
const TOKEN_TTL_MS = 60 * 60_000;

function verifyJwt(jwt: string, publicKey: string, appId: string): boolean {
  const [header, payload, signature] = jwt.split('.');
  if (!header || !payload || !signature) return false;
  if (JSON.parse(Buffer.from(header, 'base64url').toString()).alg !== 'RS256') return false;
  const ok = createVerify('RSA-SHA256')
    .update(`${header}.${payload}`)
    .verify(publicKey, Buffer.from(signature, 'base64url'));
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { iss: unknown; iat: number; exp: number };
  const now = Math.floor(Date.now() / 1000);
  return (
    ok && String(claims.iss) === appId && claims.iat <= now + 60 && claims.exp > now && claims.exp - claims.iat <= 660
  );
}

/**
 * `host` is where it listens (loopback by default). Builds clone from GitHub in their own namespaces, which reach
 * public addresses only: a test that deploys from it listens on one of the host's addresses and lets Slipway's
 * builds reach it (SLIPWAY_EGRESS_ALLOW, as an operator would for a private git server).
 */
export async function startFakeGitHub(
  root: string,
  opts: { tokenTtlMs?: number; host?: string } = {},
): Promise<FakeGitHub> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const installations = new Map<number, { account: string; repos: string[] }>();
  const tokens = new Map<string, { installationId: number; expiresAt: number }>();
  const fake = {
    appId: '4242',
    slug: 'slipway-test',
    privateKey,
    webhookSecret: randomBytes(16).toString('hex'),
    requests: [] as FakeGitHub['requests'],
    tokens: [] as string[],
    statuses: [] as Obj[],
  };
  const repoObj = (account: string, name: string, i: number) => ({
    id: 1000 + i,
    name,
    full_name: `${account}/${name}`,
    private: true,
    default_branch: 'main',
    clone_url: `${base}/${account}/${name}.git`,
    html_url: `${base}/${account}/${name}`,
  });
  /** The installation a current token belongs to. */
  const tokenInstallation = (token: string | undefined) => {
    const t = token ? tokens.get(token) : undefined;
    return t && t.expiresAt > Date.now() ? t.installationId : undefined;
  };
  const json = (res: http.ServerResponse, status: number, body: unknown, headers: Obj = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  async function api(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: string) {
    const auth = req.headers.authorization ?? '';
    const bearer = auth.replace(/^(bearer|token) /i, '');
    let m: RegExpExecArray | null;
    if (url.pathname.startsWith('/api/app/')) {
      if (!verifyJwt(bearer, publicKey, fake.appId))
        return json(res, 401, { message: 'A JSON web token could not be decoded' });
      if ((m = /^\/api\/app\/installations\/(\d+)$/.exec(url.pathname)) && req.method === 'GET') {
        const inst = installations.get(Number(m[1]));
        if (!inst) return json(res, 404, { message: 'Not Found' });
        return json(res, 200, {
          id: Number(m[1]),
          account: { login: inst.account, type: 'Organization' },
          repository_selection: 'selected',
        });
      }
      if ((m = /^\/api\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname)) && req.method === 'POST') {
        if (!installations.has(Number(m[1]))) return json(res, 404, { message: 'Not Found' });
        const token = `ghs_${randomBytes(18).toString('base64url')}`;
        const expiresAt = Date.now() + (opts.tokenTtlMs ?? TOKEN_TTL_MS);
        tokens.set(token, { installationId: Number(m[1]), expiresAt });
        fake.tokens.push(token);
        return json(res, 201, {
          token,
          expires_at: new Date(expiresAt).toISOString(),
          repository_selection: 'selected',
        });
      }
      return json(res, 404, { message: 'Not Found' });
    }
    const installationId = tokenInstallation(bearer);
    if (!installationId) return json(res, 401, { message: 'Bad credentials' });
    const inst = installations.get(installationId)!;
    if (url.pathname === '/api/installation/repositories' && req.method === 'GET') {
      const page = Number(url.searchParams.get('page') ?? '1');
      const all = inst.repos.map((name, i) => repoObj(inst.account, name, i));
      const last = Math.max(1, Math.ceil(all.length / PAGE_SIZE));
      const links = [];
      const at = (p: number) => `<${apiBase}/installation/repositories?per_page=${PAGE_SIZE}&page=${p}>`;
      if (page < last) links.push(`${at(page + 1)}; rel="next"`, `${at(last)}; rel="last"`);
      if (page > 1) links.push(`${at(page - 1)}; rel="prev"`, `${at(1)}; rel="first"`);
      return json(
        res,
        200,
        {
          total_count: all.length,
          repository_selection: 'selected',
          repositories: all.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE),
        },
        links.length ? { link: links.join(', ') } : {},
      );
    }
    if (
      (m = /^\/api\/repos\/([^/]+)\/([^/]+)\/statuses\/([0-9a-f]{40})$/.exec(url.pathname)) &&
      req.method === 'POST'
    ) {
      if (m[1] !== inst.account || !inst.repos.includes(m[2]!)) return json(res, 404, { message: 'Not Found' });
      const status = { owner: m[1], repo: m[2], sha: m[3], ...JSON.parse(body) };
      fake.statuses.push(status);
      return json(res, 201, { id: fake.statuses.length, ...status });
    }
    return json(res, 404, { message: 'Not Found' });
  }

  /** Smart HTTP through `git http-backend` (CGI), for a current token of an installation that reaches the repo. */
  function gitHttp(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: Buffer) {
    // `owner/repo.git` or `owner/repo`, as GitHub serves both.
    const m = /^\/([^/]+)\/([^/]+?)(?:\.git)?(\/(?:info\/refs|git-upload-pack|git-receive-pack))$/.exec(url.pathname);
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    const password = basic ? Buffer.from(basic[1]!, 'base64').toString().split(':').slice(1).join(':') : undefined;
    const installationId = tokenInstallation(password);
    const inst = installationId ? installations.get(installationId) : undefined;
    if (!m || !inst || inst.account !== m[1] || !inst.repos.includes(m[2]!)) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub"' });
      return res.end();
    }
    serveGitHttp(req, res, { root, pathInfo: `/${m[1]}/${m[2]}.git${m[3]}`, query: url.search.slice(1), body });
  }

  /** GitHub's OAuth web flow: authorize (approved at once for `oauthUser`), then the code for a token with PKCE. */
  const oauth = { clientId: 'Iv1.oauthclient', clientSecret: randomBytes(20).toString('hex') };
  const appClient = { clientId: 'Iv1.appclient', clientSecret: randomBytes(20).toString('hex') };
  const installCodes = new Map<string, number[]>();
  const oauthUser: FakeGitHub['oauthUser'] = { id: 7001, login: 'octo', name: 'Octo Cat', emails: [] };
  const codes = new Map<string, { challenge: string; redirectUri: string; user: Obj; expiresAt: number }>();
  const userTokens = new Map<string, Obj>();
  function oauthWeb(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: string) {
    if (url.pathname === '/login/oauth/authorize' && req.method === 'GET') {
      const q = url.searchParams;
      if (q.get('client_id') !== oauth.clientId || q.get('code_challenge_method') !== 'S256')
        return json(res, 400, { error: 'invalid_request' });
      const code = randomBytes(10).toString('hex');
      codes.set(code, {
        challenge: q.get('code_challenge') ?? '',
        redirectUri: q.get('redirect_uri') ?? '',
        user: structuredClone(oauthUser),
        expiresAt: Date.now() + 600_000,
      });
      const back = new URL(q.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (url.pathname === '/login/oauth/access_token' && req.method === 'POST') {
      const p = req.headers['content-type']?.includes('json')
        ? new URLSearchParams(JSON.parse(body) as Record<string, string>)
        : new URLSearchParams(body);
      // The App's client redeems setup codes (no PKCE in that flow).
      if (p.get('client_id') === appClient.clientId) {
        const setup = installCodes.get(p.get('code') ?? '');
        installCodes.delete(p.get('code') ?? '');
        if (p.get('client_secret') !== appClient.clientSecret)
          return json(res, 200, { error: 'incorrect_client_credentials' });
        if (!setup) return json(res, 200, { error: 'bad_verification_code' });
        const token = `ghu_${randomBytes(16).toString('hex')}`;
        userTokens.set(token, { id: 1, login: 'installer', name: 'Installer', emails: [], installations: setup });
        return json(res, 200, { access_token: token, token_type: 'bearer', scope: '' });
      }
      const grant = codes.get(p.get('code') ?? '');
      codes.delete(p.get('code') ?? '');
      const challenge = createHash('sha256')
        .update(p.get('code_verifier') ?? '')
        .digest('base64url');
      // GitHub answers a bad exchange with 200 and an error body.
      if (p.get('client_id') !== oauth.clientId || p.get('client_secret') !== oauth.clientSecret)
        return json(res, 200, { error: 'incorrect_client_credentials' });
      if (
        !grant ||
        grant.expiresAt < Date.now() ||
        grant.redirectUri !== p.get('redirect_uri') ||
        grant.challenge !== challenge
      )
        return json(res, 200, { error: 'bad_verification_code' });
      const token = `gho_${randomBytes(16).toString('hex')}`;
      userTokens.set(token, grant.user);
      return json(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    return json(res, 404, { message: 'Not Found' });
  }
  function oauthApi(req: http.IncomingMessage, res: http.ServerResponse, url: URL) {
    const user = userTokens.get((req.headers.authorization ?? '').replace(/^(bearer|token) /i, ''));
    if (!user) return json(res, 401, { message: 'Bad credentials' });
    if (url.pathname === '/api/user') return json(res, 200, { id: user.id, login: user.login, name: user.name });
    if (url.pathname === '/api/user/installations') {
      const installs = (user.installations ?? []) as number[];
      return json(res, 200, {
        total_count: installs.length,
        installations: installs.map((id) => ({ id, account: { login: installations.get(id)?.account } })),
      });
    }
    return json(res, 200, user.emails);
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', base);
      fake.requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        auth: req.headers.authorization?.split(' ')[0],
      });
      const body = Buffer.concat(chunks);
      if (url.pathname.startsWith('/login/oauth/')) oauthWeb(req, res, url, body.toString());
      else if (['/api/user', '/api/user/emails', '/api/user/installations'].includes(url.pathname))
        oauthApi(req, res, url);
      else if (url.pathname.startsWith('/api/')) void api(req, res, url, body.toString());
      else gitHttp(req, res, url, body);
    });
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const base = `http://${host}:${(server.address() as AddressInfo).port}`;
  const apiBase = `${base}/api`;

  return {
    ...fake,
    oauth,
    appClient,
    appEnv: () => ({
      SLIPWAY_GITHUB_APP_ID: fake.appId,
      SLIPWAY_GITHUB_APP_SLUG: fake.slug,
      SLIPWAY_GITHUB_APP_PRIVATE_KEY: fake.privateKey,
      SLIPWAY_GITHUB_WEBHOOK_SECRET: fake.webhookSecret,
      SLIPWAY_GITHUB_APP_CLIENT_ID: appClient.clientId,
      SLIPWAY_GITHUB_APP_CLIENT_SECRET: appClient.clientSecret,
      SLIPWAY_GITHUB_API_URL: apiBase,
      SLIPWAY_GITHUB_WEB_URL: base,
    }),
    installCode(reach) {
      const code = randomBytes(10).toString('hex');
      installCodes.set(code, reach);
      return code;
    },
    get oauthUser() {
      return oauthUser;
    },
    url: base,
    apiUrl: apiBase,
    addInstallation: (id, account, repos) => void installations.set(id, { account, repos }),
    async deliver(slipwayUrl, event, payload, opts = {}) {
      const text = JSON.stringify(payload);
      const deliveryId = opts.deliveryId ?? randomBytes(8).toString('hex');
      const signature = `sha256=${createHmac('sha256', opts.secret ?? fake.webhookSecret)
        .update(text)
        .digest('hex')}`;
      const res = await fetch(`${slipwayUrl}/v1/github/webhook`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': event,
          'x-github-delivery': deliveryId,
          'x-hub-signature-256': signature,
        },
        body: text,
      });
      return { status: res.status, body: await res.json(), deliveryId };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
