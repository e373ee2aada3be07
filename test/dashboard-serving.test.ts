import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { requireDashboardBuild } from './helpers/browser.js';
import { REPO_ROOT } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

/** How Slipway serves the built dashboard (web/dist): the browser flows are test/dashboard.test.ts's. */
let server: TestServer;
let script: string;
beforeAll(async () => {
  requireDashboardBuild();
  script = readdirSync(path.join(REPO_ROOT, 'web/dist/assets')).find((f) => /^index-.*\.js$/.test(f))!;
  server = await bootServer();
}, 120_000);
afterAll(() => server?.close());

const page = (urlPath: string, headers: Record<string, string> = { accept: 'text/html,*/*' }) =>
  fetch(`${server.url}${urlPath}`, { headers, redirect: 'manual' });

it('serves the app at / and at every dashboardUrl, with a strict Content-Security-Policy and no caching', async () => {
  for (const urlPath of ['/', '/services/srv-anything', '/postgres/dpg-x', '/key-value/red-x', '/invites/inv_x']) {
    const res = await page(urlPath);
    expect(res.status, urlPath).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await res.text();
    expect(html).toContain(`/assets/${script}`);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
  }
});

it('serves hashed assets precompressed and cached for a year', async () => {
  const res = await page(`/assets/${script}`, { 'accept-encoding': 'gzip' });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-encoding')).toBe('gzip');
  expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  // fetch decodes gzip itself: the body is the script.
  expect(await res.text()).toMatch(/react/i);
  const br = await page(`/assets/${script}`, { 'accept-encoding': 'br, gzip' });
  expect(br.headers.get('content-encoding')).toBe('br');
});

it('leaves the API its JSON answers: an unknown API path, or a page asked for without text/html, is a 404', async () => {
  const api = await page('/v1/no-such-route');
  expect(api.status).toBe(404);
  expect(await api.json()).toMatchObject({ code: 'not_found' });
  const asJson = await page('/services/srv-x', { accept: 'application/json' });
  expect(asJson.status).toBe(404);
  const post = await fetch(`${server.url}/services/srv-x`, { method: 'POST', headers: { accept: 'text/html' } });
  expect(post.status).toBe(404);
});
