/** GET /v1/openapi.json: a valid OpenAPI 3.1 document of every route, and the docs UI that renders it. */
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootServer, type TestServer } from './helpers/server.js';
import { client, type Client } from './helpers/client.js';

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];
const ACCESS = ['public', 'signed-in', 'operator', 'viewer', 'developer', 'admin', 'owner'];

let server: TestServer;
let api: Client;
let doc: any;

/** `/v1/x/{id}` and `/v1/x/:id` both become `/v1/x/:`, as parameter names do not matter to the router. */
const normalize = (p: string) => p.replace(/\{[^}]+\}|:[^/]+/g, ':');

/** "METHOD path" of every route the server registered, read from Fastify's route tree. */
function registeredRoutes(): string[] {
  const tree = server.slipway.app.printRoutes({ commonPrefix: false });
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!.replace(/\|.*$/, '')); // `:inviteId|:token`: one node, several names
    for (const method of m[3]?.split(', ') ?? [])
      if (method !== 'HEAD') out.push(`${method} ${normalize(stack.join(''))}`);
  }
  return out;
}

const documented = () =>
  Object.entries<any>(doc.paths).flatMap(([p, item]) =>
    METHODS.filter((m) => item[m]).map((m) => ({ name: `${m.toUpperCase()} ${p}`, op: item[m] })),
  );

beforeAll(async () => {
  server = await bootServer();
  api = client(server.url);
  const res = await api.get('/v1/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  doc = res.body;
});
afterAll(() => server?.close());

describe('GET /v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toMatch(/^3\.1(\.|$)/);
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
  });

  it('documents every route registered under /v1 and /api (and known ones)', () => {
    const registered = registeredRoutes().filter((r) => / \/(v1|api)(\/|$)/.test(r) && r !== 'GET /v1/openapi.json');
    expect(registered).toEqual(
      expect.arrayContaining([
        'GET /api/health',
        'POST /v1/auth/register',
        'DELETE /v1/api-keys/:',
        'GET /v1/owners/:/members',
      ]),
    );
    const inDoc = documented().map((d) => normalize(d.name));
    expect(registered.filter((r) => !inDoc.includes(r))).toEqual([]);
    // ...and documents nothing the server does not serve.
    expect(inDoc.filter((d) => !registeredRoutes().includes(d))).toEqual([]);
    for (const known of [
      '/api/health',
      '/status',
      '/v1/users',
      '/v1/auth/login',
      '/v1/api-keys/{apiKeyId}',
      '/v1/owners/{ownerId}/audit-logs',
      '/v1/team-invites/{token}/accept',
    ]) {
      expect(doc.paths, known).toHaveProperty([known]);
    }
  });

  it('gives every operation a unique operationId, a summary and x-slipway-access; public ones have security: []', () => {
    const ops = documented();
    expect(ops.length).toBeGreaterThan(10);
    for (const { name, op } of ops) {
      expect(op.operationId, name).toMatch(/^[A-Za-z0-9]+$/);
      expect(op.summary, name).toEqual(expect.stringMatching(/\S/));
      expect(ACCESS, `${name} x-slipway-access`).toContain(op['x-slipway-access']);
      if (op['x-slipway-access'] === 'public') expect(op.security, name).toEqual([]);
      else expect(op.security?.length ?? doc.security.length, `${name} must require credentials`).toBeGreaterThan(0);
    }
    const ids = ops.map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['BearerAuth', 'SessionCookie']);
  });

  it('marks no query parameter that has a default as required (e.g. ?limit=, default 20)', () => {
    const wrong = documented().flatMap(({ name, op }) =>
      (op.parameters ?? [])
        .filter((p: any) => p.in === 'query' && p.required && p.schema?.default !== undefined)
        .map((p: any) => `${name} ?${p.name}`),
    );
    expect(wrong).toEqual([]);
  });
});

describe('GET /docs', () => {
  it('serves the docs UI as HTML, whose JSON endpoint serves the same document', async () => {
    const page = await fetch(`${server.url}/docs`); // follows redirects
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toMatch(/<html/i);
    // The UI's initializer script names the document it loads, relative to the page.
    const script = /src="([^"]*swagger-initializer\.js)"/.exec(html)?.[1];
    expect(script).toBeTruthy();
    const init = await fetch(new URL(script!, page.url));
    expect(init.status).toBe(200);
    const docUrl = /url: resolveUrl\('([^']+)'\)/.exec(await init.text())?.[1];
    expect(docUrl).toBeTruthy();
    const base = page.url.endsWith('/') ? page.url : `${page.url}/`;
    const served = await fetch(new URL(docUrl!, base));
    expect(served.status).toBe(200);
    expect(await served.json()).toEqual(doc);
  });
});
