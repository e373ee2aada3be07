/**
 * Identity providers for the sign-in tests. Google and Apple are played by a real, OpenID-certified provider on
 * loopback (the `oidc-provider` package): discovery, JWKS, PKCE, state, nonce, signed ID tokens. The Apple-like one
 * also checks Apple's ES256 client-secret JWT at its token endpoint (Apple's own rule) and sends `email_verified` as
 * a string, as Apple does; Slipway asks it for form_post. A test picks who signs in next with `signInAs`.
 */
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { importSPKI, jwtVerify } from 'jose';
import Provider from 'oidc-provider';

export interface Account {
  sub: string;
  email: string;
  emailVerified: boolean;
  name?: string;
}
export interface FakeIdp {
  issuer: string;
  clientId: string;
  /** Google-like: the client secret; Apple-like: the team's key pair (the secret is a JWT Slipway makes). */
  clientSecret?: string;
  apple?: { teamId: string; keyId: string; privateKey: string };
  /** Who the next sign-in is. */
  signInAs(account: Account): void;
  /** How long a code lives (seconds): 1 lets a test present an expired one. */
  codeTtlSeconds: number;
  close(): Promise<void>;
}

export async function startFakeIdp(kind: 'google' | 'apple', redirectUri: string): Promise<FakeIdp> {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let account: Account = { sub: 'nobody', email: 'nobody@example.com', emailVerified: false };
  const state = { codeTtlSeconds: 60 };
  const clientId = `${kind}-client`;
  const staticSecret = `${kind}-secret-${Math.random().toString(36).slice(2)}`;
  const team =
    kind === 'apple'
      ? generateKeyPairSync('ec', {
          namedCurve: 'P-256',
          privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
          publicKeyEncoding: { type: 'spki', format: 'pem' },
        })
      : undefined;
  const apple = team ? { teamId: 'TEAM123456', keyId: 'KEY1234567', privateKey: team.privateKey } : undefined;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: staticSecret,
        redirect_uris: [redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    pkce: { required: () => true },
    // Google and Apple put the email claims in the ID token itself.
    conformIdTokenClaims: false,
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], name: ['name'] },
    scopes: ['openid', 'email', 'profile', 'name'],
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: { AuthorizationCode: () => state.codeTtlSeconds },
    async findAccount(_ctx, id) {
      const who = account.sub === id ? account : undefined;
      if (!who) return undefined;
      return {
        accountId: id,
        claims: async () => ({
          sub: id,
          email: who.email,
          // Apple says "true"/"false" as strings.
          email_verified: kind === 'apple' ? String(who.emailVerified) : who.emailVerified,
          ...(who.name ? { name: who.name } : {}),
        }),
      };
    },
  });
  provider.on('server_error', (_ctx, err) => process.stderr.write(`fake idp: ${err.stack}\n`));

  // Apple's rule: the client secret is an ES256 JWT by the team's key; checked, then swapped for the registered one.
  if (team && apple)
    provider.use(async (ctx, next) => {
      if (ctx.method === 'POST' && ctx.path === '/token') {
        const chunks: Buffer[] = [];
        for await (const c of ctx.req) chunks.push(c as Buffer);
        const body = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()));
        try {
          const key = await importSPKI(team.publicKey, 'ES256');
          const { protectedHeader } = await jwtVerify(body.client_secret ?? '', key, {
            issuer: apple.teamId,
            subject: clientId,
            audience: issuer,
            algorithms: ['ES256'],
          });
          if (protectedHeader.kid !== apple.keyId) throw new Error('kid');
          body.client_secret = staticSecret;
        } catch {
          body.client_secret = 'refused';
        }
        (ctx.req as unknown as { body: unknown }).body = body;
      }
      await next();
    });

  const callback = provider.callback();
  /** The user "signs in and consents" at once: login plus a grant of what was asked. */
  async function interaction(req: http.IncomingMessage, res: http.ServerResponse) {
    try {
      const details = await provider.interactionDetails(req, res);
      const grant = new provider.Grant({ accountId: account.sub, clientId });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: account.sub }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
    } catch (err) {
      res.statusCode = 500;
      res.end(String(err));
    }
  }
  server.on('request', (req, res) => {
    if (/^\/interaction\/[^/?]+/.test(req.url ?? '')) void interaction(req, res);
    else void callback(req, res);
  });

  return {
    issuer,
    clientId,
    ...(apple ? { apple } : { clientSecret: staticSecret }),
    signInAs: (a) => void (account = a),
    get codeTtlSeconds() {
      return state.codeTtlSeconds;
    },
    set codeTtlSeconds(v: number) {
      state.codeTtlSeconds = v;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A browser for redirect flows: a cookie jar per host, redirects followed by hand, form_post pages submitted. */
export function browser() {
  const jar = new Map<string, Map<string, string>>();
  const cookieHeader = (url: URL) => [...(jar.get(url.host) ?? new Map())].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (url: URL, res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const [name, ...value] = pair!.split('=');
      const cookies = jar.get(url.host) ?? new Map<string, string>();
      const expired = attrs.some((a) => /^\s*max-age=0/i.test(a) || /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (expired || value.join('=') === '') cookies.delete(name!.trim());
      else cookies.set(name!.trim(), value.join('='));
      jar.set(url.host, cookies);
    }
  };
  async function request(url: URL, init: RequestInit = {}) {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: cookieHeader(url) },
    });
    keep(url, res);
    return res;
  }
  return {
    jar,
    request,
    cookie: (host: string, name: string) => jar.get(host)?.get(name),
    /**
     * Follows redirects (and submits a form_post page) from `start` until a response is not a redirect or the next
     * hop would go to `stopAt`'s origin and path; returns the last response and the URL it stopped at.
     */
    async follow(start: URL, stopAt?: URL) {
      let url = start;
      let init: RequestInit = {};
      for (let hop = 0; hop < 20; hop++) {
        if (stopAt && url.origin === stopAt.origin && url.pathname === stopAt.pathname && hop > 0)
          return { url, init, res: undefined };
        const res = await request(url, init);
        init = {};
        const location = res.headers.get('location');
        if (res.status >= 300 && res.status < 400 && location) {
          url = new URL(location, url);
          continue;
        }
        const html = res.headers.get('content-type')?.includes('text/html') ? await res.text() : '';
        const form = /<form[^>]*method="post"[^>]*action="([^"]+)"/i.exec(html);
        if (!form) return { url, init, res };
        // form_post: the page's hidden inputs, posted to its action.
        const fields = new URLSearchParams();
        for (const input of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g))
          fields.append(input[1]!, input[2]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"'));
        url = new URL(form[1]!.replace(/&amp;/g, '&'), url);
        init = {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: fields.toString(),
        };
      }
      throw new Error('too many redirects');
    },
  };
}
