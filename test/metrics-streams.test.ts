/**
 * Render's metrics streams (PUT/GET/DELETE /v1/metrics-stream/:ownerId): a deployed app's CPU, memory and the
 * router's request counts reach an OTLP/HTTP receiver in the test, as Render's metric names, through the official
 * OpenTelemetry exporter; the token as a Bearer token, never in a body; bad input a 400; another workspace's a 404.
 */
import { Ajv } from 'ajv';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { loadRenderReference } from './helpers/render-reference.js';
import { bootServer, type TestServer } from './helpers/server.js';
import { createOtlpSender } from '../src/integrations/otlp-metrics.js';

const ajv = new Ajv({ strict: false });
ajv.addSchema(loadRenderReference(), 'render');
const streamBody = ajv.getSchema(
  'render#/paths/~1metrics-stream~1%7BownerId%7D/put/responses/200/content/application~1json/schema',
)!;

interface Point {
  name: string;
  kind: 'gauge' | 'sum';
  value: number;
  attrs: Record<string, string>;
}
/** An OTLP/HTTP JSON receiver: each export's path, Authorization header and points. */
const exports: { path: string; auth?: string; points: Point[] }[] = [];
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString('utf8')));
  req.on('end', () => {
    const points: Point[] = [];
    for (const rm of JSON.parse(body).resourceMetrics ?? [])
      for (const sm of rm.scopeMetrics ?? [])
        for (const m of sm.metrics ?? []) {
          const kind = m.sum ? 'sum' : 'gauge';
          for (const dp of (m.sum ?? m.gauge).dataPoints)
            points.push({
              name: m.name,
              kind,
              value: Number(dp.asDouble ?? dp.asInt),
              attrs: Object.fromEntries(
                (dp.attributes ?? []).map((a: { key: string; value: { stringValue: string } }) => [
                  a.key,
                  a.value.stringValue,
                ]),
              ),
            });
        }
    exports.push({ path: req.url ?? '', auth: req.headers.authorization, points });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});

let server: TestServer;
let api: Client;
let owner: TestUser, stranger: TestUser;
let web: { id: string; slug: string };
let receiverUrl: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  server = await bootServer({
    SLIPWAY_METRICS_INTERVAL: '1',
    SLIPWAY_METRICS_STREAM_INTERVAL: '1',
    SLIPWAY_METRICS_STREAM_ALLOW_PRIVATE: '1', // the receiver is on loopback
  });
  api = client(server.url);
  [owner, stranger] = await Promise.all([signUp(api), signUp(api)]);
  const d = await deployFixture(api, owner, 'node-web', { serviceDetails: { runtime: 'node', plan: 'starter' } });
  if (d.deploy.status !== 'live') throw new Error(`fixture deploy ended ${d.deploy.status}`);
  web = { id: d.service.id, slug: d.service.slug };
}, 120_000);
afterAll(async () => {
  await server?.close();
  receiver.close();
});

/** The newest value of a metric in the exports so far, for the points `match` keeps. */
const newest = (name: string, match: (p: Point) => boolean = () => true) =>
  exports
    .flatMap((e) => e.points)
    .filter((p) => p.name === name && p.attrs['service.id'] === web.id && match(p))
    .at(-1);

describe('a metrics stream', () => {
  it("sends the service's metrics to the OTLP endpoint, as Render's names, with the token as a Bearer token", async () => {
    const path = `/v1/metrics-stream/${owner.workspaceId}`;
    expect((await api.get(path, owner)).status).toBe(404);
    const put = await api.put(path, { provider: 'CUSTOM', url: receiverUrl, token: 'otlp-secret-1' }, owner);
    expect(put.status, put.text).toBe(200);
    expect(streamBody(put.body), JSON.stringify(streamBody.errors)).toBe(true);
    expect(put.body).toEqual({ ownerId: owner.workspaceId, provider: 'CUSTOM', url: `${receiverUrl}/` });
    expect((await api.get(path, owner)).body).toEqual(put.body);

    for (let i = 0; i < 12; i++) expect((await viaRouter(server.slipway.routerPort, web.slug, '/')).status).toBe(200);
    for (let i = 0; i < 3; i++)
      expect((await viaRouter(server.slipway.routerPort, web.slug, '/missing?status=404')).status).toBe(404);
    const requests = (status: string) =>
      newest('render.service.http.requests.total', (p) => p.attrs.status_code === status)?.value ?? 0;
    await waitFor('the requests exported', async () => requests('200') >= 12 && requests('404') >= 3, 30_000, 250);
    expect(requests('200')).toBe(12);
    expect(requests('404')).toBe(3);

    const last = exports.at(-1)!;
    expect(last.path).toBe('/v1/metrics');
    expect(last.auth).toBe('Bearer otlp-secret-1');
    const memory = newest('render.service.memory.usage')!;
    expect(memory.kind).toBe('gauge');
    expect(memory.value).toBeGreaterThan(1024 * 1024);
    expect(memory.attrs['service.name']).toBe((await api.get(`/v1/services/${web.id}`, owner)).body.name);
    expect(memory.attrs['service.instance.id']).toMatch(/\S/);
    expect(newest('render.service.cpu.limit')!.value).toBe(0.5); // starter: half a core
    expect(newest('render.service.memory.limit')!.value).toBe(512 * 1024 * 1024);
    const transmit = newest('render.service.network.transmit.bytes')!;
    expect(transmit.kind).toBe('sum');
    expect(transmit.value).toBeGreaterThan(0);
    // Sums are totals since the stream began: a later export never goes lower.
    const cpu = () => newest('render.service.cpu.time')?.value ?? -1;
    const cpuBefore = cpu();
    expect(cpuBefore).toBeGreaterThanOrEqual(0); // the instance's CPU time was exported
    const seen = exports.length;
    await waitFor('another export', async () => exports.length > seen, 10_000, 250);
    expect(cpu()).toBeGreaterThanOrEqual(cpuBefore);

    // A new token is used from the next export; it is never shown.
    const rotated = await api.put(path, { token: 'otlp-secret-2' }, owner);
    expect(rotated.body).toEqual(put.body);
    expect(JSON.stringify(rotated.body)).not.toContain('otlp-secret');
    await waitFor('the new token', async () => exports.at(-1)?.auth === 'Bearer otlp-secret-2', 10_000, 250);

    // Deleted: no more exports.
    expect((await api.delete(path, owner)).status).toBe(204);
    expect((await api.get(path, owner)).status).toBe(404);
    await new Promise((r) => setTimeout(r, 1500)); // an export under way at the delete may still land
    const count = exports.length;
    await new Promise((r) => setTimeout(r, 2500));
    expect(exports.length).toBe(count);
  }, 90_000);

  it("refuses bad input (400) and another workspace's stream (404)", async () => {
    const path = `/v1/metrics-stream/${owner.workspaceId}`;
    const bad = async (body: unknown, field: RegExp) => {
      const res = await api.put(path, body, owner);
      expect(res.status, res.text).toBe(400);
      expect(res.text).toMatch(field); // the message, or the failing field of a schema error
    };
    await bad({ provider: 'CUSTOM' }, /url is required/);
    await bad({ url: 'ftp://otlp.example.com' }, /http/);
    await bad({ url: 'https://user:pw@otlp.example.com' }, /credentials/);
    await bad({ url: 'not a url' }, /URL/);
    await bad({ url: 'https://otlp.example.com', provider: 'SPLUNK' }, /provider/);
    await bad({ url: 'https://otlp.example.com', token: 'has space' }, /token/);
    expect((await api.get(path, owner)).status).toBe(404); // nothing was stored
    expect((await api.put(path, { url: 'https://otlp.example.com' }, stranger)).status).toBe(404);
    expect((await api.get(path, stranger)).status).toBe(404);
    expect((await api.delete(path, stranger)).status).toBe(404);
  });

  it('reaches no loopback or private address unless allowed: a name that resolves to one, or a literal', async () => {
    const before = exports.length;
    const port = (receiver.address() as AddressInfo).port;
    for (const url of [`http://localhost:${port}`, `http://127.0.0.1:${port}`]) {
      const sender = createOtlpSender({ url, allowPrivate: false, timeoutMs: 2000 });
      await expect(sender.send([])).rejects.toThrow(/private or reserved/);
      await sender.close();
    }
    expect(exports.length).toBe(before);
  });
});
