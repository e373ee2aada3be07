/**
 * Render's `/headers` and `/routes` of a static site, driven over HTTP and checked through the real router: a rule
 * applies at once, without a deploy. Also the directory redirect (`/docs` → `/docs/`).
 */
import { describe, expect, it } from 'vitest';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { addMember, signUp, type TestUser } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();
const router = (slug: string, path = '/') => viaRouter(t.server.slipway.routerPort, slug, path);

async function site(owner: TestUser) {
  const { service, deploy } = await deployFixture(
    t.api,
    owner,
    'static-site',
    { type: 'static_site', serviceDetails: { publishPath: 'public' } },
    { 'public/docs/index.html': '<p>docs</p>', 'public/app.html': 'the app' },
  );
  expect(deploy.status).toBe('live');
  return service as { id: string; slug: string };
}

describe("a static site's header rules", () => {
  it('adds, lists, filters, pages, replaces and deletes rules, each reaching the router at once', async () => {
    const owner = await signUp(t.api);
    const { id, slug } = await site(owner);
    const url = `/v1/services/${id}/headers`;
    expect((await router(slug, '/')).headers['x-frame-options']).toBeUndefined();

    const added = await t.api.post(url, { path: '/*', name: 'X-Frame-Options', value: 'DENY' }, owner);
    expect(added.status).toBe(201);
    expect(added.body.headers).toEqual({
      id: expect.stringMatching(/^hdr-[0-9a-v]{20}$/),
      path: '/*',
      name: 'X-Frame-Options',
      value: 'DENY',
    });
    expect((await router(slug, '/')).headers['x-frame-options']).toBe('DENY');
    expect((await t.api.post(url, { path: '/*', name: 'X-Frame-Options', value: 'DENY' }, owner)).status).toBe(409);

    const cache = { path: '/style.css', name: 'Cache-Control', value: 'max-age=60' };
    expect((await t.api.post(url, cache, owner)).status).toBe(201);
    const list = await t.api.get(url, owner);
    expect(list.body.map((i: any) => i.header.name)).toEqual(['X-Frame-Options', 'Cache-Control']);
    expect((await t.api.get(`${url}?name=Cache-Control,X-Nothing`, owner)).body).toEqual([list.body[1]]);
    const first = await t.api.get(`${url}?limit=1`, owner);
    expect(first.body).toEqual([list.body[0]]);
    expect((await t.api.get(`${url}?limit=1&cursor=${first.body[0].cursor}`, owner)).body).toEqual([list.body[1]]);
    expect((await router(slug, '/style.css')).headers['cache-control']).toBe('max-age=60');

    const replaced = await t.api.put(url, [{ path: '/docs/*', name: 'X-Docs', value: 'yes' }], owner);
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual([expect.objectContaining({ path: '/docs/*', name: 'X-Docs', value: 'yes' })]);
    expect((await router(slug, '/')).headers['x-frame-options']).toBeUndefined();
    expect((await router(slug, '/docs/')).headers['x-docs']).toBe('yes');

    const gone = await t.api.delete(`${url}/${replaced.body[0].id}`, owner);
    expect(gone.status).toBe(204);
    expect((await router(slug, '/docs/')).headers['x-docs']).toBeUndefined();
    expect((await t.api.delete(`${url}/${replaced.body[0].id}`, owner)).status).toBe(404);
    expect((await t.api.get(url, owner)).body).toEqual([]);
  });

  it('refuses bad rules with a 400, leaving the rules as they were', async () => {
    const owner = await signUp(t.api);
    const { id, slug } = await site(owner);
    const url = `/v1/services/${id}/headers`;
    expect((await t.api.post(url, { path: '/*', name: 'X-Kept', value: '1' }, owner)).status).toBe(201);
    for (const bad of [
      { path: '/*', name: 'Content-Length', value: '0' }, // would desynchronise the connection
      { path: '/*', name: 'Bad Name', value: '1' },
      { path: 'no-slash', name: 'X-A', value: '1' },
      { path: '/*', name: 'X-A', value: 'line\r\nbreak' },
      { path: '/*', name: 'X-A' },
      { path: `/${'*a'.repeat(17)}`, name: 'X-A', value: '1' }, // 17 wildcards: each request would pay for them
    ]) {
      const res = await t.api.post(url, bad, owner);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.code).toBeTruthy();
    }
    const twice = { path: '/*', name: 'X-B', value: '2' };
    expect((await t.api.put(url, [twice, twice], owner)).status).toBe(400);
    expect((await t.api.put(url, Array(101).fill(twice), owner)).status).toBe(400);
    expect((await t.api.get(`${url}?cursor=nonsense`, owner)).status).toBe(400);
    const wild = await t.api.post(
      `/v1/services/${id}/routes`,
      { type: 'rewrite', source: `/${':a/'.repeat(17)}`, destination: '/' },
      owner,
    );
    expect(wild.status).toBe(400);
    expect(wild.body.message).toMatch(/has 17 wildcards \(\* and :name\); a pattern takes at most 16/);
    expect((await t.api.get(url, owner)).body.map((i: any) => i.header.name)).toEqual(['X-Kept']);
    expect((await router(slug, '/')).headers['x-kept']).toBe('1');
  });
});

describe("a static site's redirect and rewrite rules", () => {
  it('applies rules in priority order; POST inserts at a priority, PATCH moves, PUT replaces, DELETE removes', async () => {
    const owner = await signUp(t.api);
    const { id, slug } = await site(owner);
    const url = `/v1/services/${id}/routes`;

    const redirect = await t.api.post(
      url,
      { type: 'redirect', source: '/old/:page', destination: '/new/:page' },
      owner,
    );
    expect(redirect.status).toBe(201);
    expect(redirect.body).toEqual({
      id: expect.stringMatching(/^rdr-[0-9a-v]{20}$/),
      type: 'redirect',
      source: '/old/:page',
      destination: '/new/:page',
      priority: 0,
    });
    const old = await router(slug, '/old/a');
    expect(old.status).toBe(301);
    expect(old.headers.location).toBe('/new/a');

    // Inserted before the redirect: a rewrite of everything now wins for /old/a too.
    const rewrite = await t.api.post(
      url,
      { type: 'rewrite', source: '/*', destination: '/app.html', priority: 0 },
      owner,
    );
    expect(rewrite.body.priority).toBe(0);
    const list = await t.api.get(url, owner);
    expect(list.body.map((i: any) => [i.route.type, i.route.priority])).toEqual([
      ['rewrite', 0],
      ['redirect', 1],
    ]);
    const rewritten = await router(slug, '/old/a');
    expect([rewritten.status, rewritten.text]).toEqual([200, 'the app']);
    expect((await t.api.get(`${url}?type=redirect`, owner)).body).toEqual([
      { cursor: expect.any(String), route: { ...redirect.body, priority: 1 } },
    ]);

    const moved = await t.api.patch(url, { id: redirect.body.id, priority: 0 }, owner);
    expect(moved.status).toBe(200);
    expect(moved.body.headers).toEqual({ ...redirect.body, priority: 0 });
    expect((await router(slug, '/old/a')).status).toBe(301);
    expect((await t.api.patch(url, { id: 'rdr-00000000000000000000', priority: 0 }, owner)).status).toBe(404);

    const replaced = await t.api.put(
      url,
      [{ type: 'redirect', source: '/x', destination: 'https://example.com/' }],
      owner,
    );
    expect(replaced.body).toEqual([expect.objectContaining({ source: '/x', priority: 0 })]);
    expect((await router(slug, '/old/a')).status).toBe(404);
    expect((await router(slug, '/x')).headers.location).toBe('https://example.com/');

    expect((await t.api.delete(`${url}/${replaced.body[0].id}`, owner)).status).toBe(204);
    expect((await router(slug, '/x')).status).toBe(404);
    expect((await t.api.get(url, owner)).body).toEqual([]);
  });

  it('belongs to static sites, to their workspace, and to developers', async () => {
    const owner = await signUp(t.api);
    const { id } = await site(owner);
    const rule = { type: 'redirect', source: '/a', destination: '/b' };
    const web = await t.api.post(
      '/v1/services',
      { type: 'web_service', name: 'not-a-site', serviceDetails: { runtime: 'node' } },
      owner,
    );
    expect((await t.api.post(`/v1/services/${web.body.service.id}/routes`, rule, owner)).status).toBe(400);
    expect((await t.api.post(`/v1/services/${id}/routes`, { ...rule, type: 'proxy' }, owner)).status).toBe(400);

    const stranger = await signUp(t.api);
    expect((await t.api.post(`/v1/services/${id}/routes`, rule, stranger)).status).toBe(404);
    expect((await t.api.get(`/v1/services/${id}/headers`, stranger)).status).toBe(404);
    const viewer = await addMember(t.api, owner, 'viewer');
    expect((await t.api.get(`/v1/services/${id}/routes`, viewer)).status).toBe(200);
    expect((await t.api.post(`/v1/services/${id}/routes`, rule, viewer)).status).toBe(403);
    expect((await t.api.get(`/v1/services/${id}/routes`, owner)).body).toEqual([]);

    expect((await t.api.post(`/v1/services/${id}/routes`, rule, owner)).status).toBe(201);
    const audit = await t.api.get(`/v1/audit-logs?limit=50`, owner);
    expect(JSON.stringify(audit.body)).toContain('AddRouteRuleEvent');
  });
});

describe('a static site directory', () => {
  it('redirects /docs to /docs/ (query kept, never to another host) and serves its index there', async () => {
    const owner = await signUp(t.api);
    const { slug } = await site(owner);
    const bare = await router(slug, '/docs');
    expect([bare.status, bare.headers.location]).toEqual([301, '/docs/']);
    expect((await router(slug, '/docs?x=1')).headers.location).toBe('/docs/?x=1');
    expect((await router(slug, '//docs')).headers.location).toBe('/docs/');
    const page = await router(slug, '/docs/');
    expect([page.status, page.text]).toEqual([200, '<p>docs</p>']);
  });
});
