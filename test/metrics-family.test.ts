/**
 * Render's metrics family (GET /v1/metrics/<name>, /v1/metrics/filters/*): real requests through the router to a
 * deployed app, then the request counts by status code, host and path, latency, bandwidth, instance count, limits and
 * filters as Render's bodies; another workspace's resource refused; bad ranges a 400.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import pg from 'pg';
import { hasPostgresServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { loadRenderReference } from './helpers/render-reference.js';
import { bootServer, type TestServer } from './helpers/server.js';

const ajv = new Ajv({ strict: false, allErrors: true });
(ajvFormats as unknown as typeof ajvFormats.default)(ajv);
ajv.addSchema(loadRenderReference(), 'render');
const renderBody = (path: string): ValidateFunction =>
  ajv.getSchema(`render#/paths/${path.replaceAll('/', '~1')}/get/responses/200/content/application~1json/schema`)!;

interface Series {
  labels: { field: string; value: string }[];
  unit: string;
  values: { timestamp: string; value: number; unit: string }[];
}
const label = (s: Series, field: string) => s.labels.find((l) => l.field === field)?.value;
const total = (s: Series | undefined) => (s?.values ?? []).reduce((a, v) => a + v.value, 0);

let server: TestServer;
let api: Client;
let owner: TestUser, stranger: TestUser;
let web: { id: string; slug: string };
const start = new Date(Date.now() - 60_000).toISOString();
/** What the test sent, by status code, and the bytes the app answered (bodies only). */
const sent = { 200: 0, 404: 0, 500: 0, slow: 0, bodyBytes: 0 };

/** GET /v1/metrics/<name> for the service since the test began, validated against Render's schema of that path. */
async function metric(name: string, query = '', as: TestUser = owner) {
  const path = `/v1/metrics/${name}?resource=${web.id}&startTime=${start}&resolutionSeconds=60${query}`;
  const res = await api.get(path, as);
  if (res.status === 200) {
    const own = name.startsWith('filters/') || name === 'bandwidth-sources';
    const schema = renderBody(own ? `/metrics/${name}` : '/metrics/cpu');
    expect(schema(res.body), `${path}: ${JSON.stringify(schema.errors)}`).toBe(true);
  }
  return res;
}

beforeAll(async () => {
  server = await bootServer({ SLIPWAY_METRICS_INTERVAL: '1' });
  api = client(server.url);
  [owner, stranger] = await Promise.all([signUp(api), signUp(api)]);
  const d = await deployFixture(api, owner, 'node-web', { serviceDetails: { runtime: 'node', plan: 'starter' } });
  if (d.deploy.status !== 'live') throw new Error(`fixture deploy ended ${d.deploy.status}`);
  web = { id: d.service.id, slug: d.service.slug };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const send = async (path: string, status: 200 | 404 | 500) => {
    const res = await viaRouter(server.slipway.routerPort, web.slug, path, { agent });
    expect(res.status).toBe(status);
    sent[status]++;
    sent.bodyBytes += Buffer.byteLength(res.text);
  };
  for (let i = 0; i < 20; i++) await send(`/users/${1000 + i}?page=${i}`, 200);
  for (let i = 0; i < 6; i++) await send('/missing?status=404', 404);
  for (let i = 0; i < 4; i++) await send('/boom?status=500', 500);
  for (let i = 0; i < 5; i++, sent.slow++) await send('/slow?delay=300', 200);
  agent.destroy();
}, 120_000);
afterAll(() => server?.close());

describe('GET /v1/metrics/http-requests, http-latency, bandwidth (through the router)', () => {
  it('counts the requests sent, by status code, host and path', async () => {
    const byStatus = await waitFor(
      'every request counted',
      async () => {
        const res = await metric('http-requests', '&aggregateBy=statusCode');
        const series = res.body as Series[];
        return series.reduce((a, s) => a + total(s), 0) >= sent[200] + sent[404] + sent[500] ? series : undefined;
      },
      20_000,
      250,
    );
    const count = (code: string) => total(byStatus.find((s) => label(s, 'statusCode') === code));
    expect({ 200: count('200'), 404: count('404'), 500: count('500') }).toEqual({
      200: sent[200],
      404: sent[404],
      500: sent[500],
    });
    for (const s of byStatus) expect(label(s, 'resource')).toBe(web.id);

    const all = (await metric('http-requests')).body as Series[];
    expect(all).toHaveLength(1);
    expect(total(all[0])).toBe(sent[200] + sent[404] + sent[500]);
    const host = `${web.slug}.localhost`;
    const byHost = (await metric('http-requests', '&aggregateBy=host')).body as Series[];
    expect(byHost.map((s) => label(s, 'host'))).toEqual([host]);
    expect(total((await metric('http-requests', '&host=elsewhere.example')).body[0])).toBe(0);
    // A path filter names a request's path or its group: /users/1003 is counted as /users/*.
    expect(total((await metric('http-requests', '&path=/users/1003')).body[0])).toBe(20);
    expect(total((await metric('http-requests', '&path=/missing&path=/boom')).body[0])).toBe(10);
  });

  it('answers latency quantiles from the response times', async () => {
    const res = await metric('http-latency', '&quantile=0.5&quantile=0.99');
    const [p50, p99] = res.body as Series[];
    expect([label(p50!, 'quantile'), label(p99!, 'quantile')]).toEqual(['0.5', '0.99']);
    expect(p50!.unit).toBe('ms');
    // 5 of 35 requests took 300 ms (>1 %): p99 is in the 250–500 ms bucket; most were fast.
    const top = Math.max(...p99!.values.map((v) => v.value));
    expect(top).toBeGreaterThanOrEqual(250);
    expect(top).toBeLessThanOrEqual(500);
    expect(Math.min(...p50!.values.map((v) => v.value))).toBeLessThan(250);
    const slowOnly = (await metric('http-latency', '&path=/slow')).body as Series[];
    expect(Math.min(...slowOnly[0]!.values.map((v) => v.value))).toBeGreaterThanOrEqual(250);
  });

  it('reports the bytes sent as bandwidth', async () => {
    const [bw] = (await metric('bandwidth')).body as Series[];
    expect(bw!.unit).toBe('bytes');
    const requests = sent[200] + sent[404] + sent[500];
    expect(total(bw)).toBeGreaterThanOrEqual(sent.bodyBytes);
    expect(total(bw)).toBeLessThanOrEqual(sent.bodyBytes + requests * 1024); // bodies and their headers
    // The same bytes, hourly, as Render's bandwidth-sources body.
    const sources = await metric('bandwidth-sources');
    expect(sources.status).toBe(200);
    const schema = renderBody('/metrics/bandwidth-sources');
    expect(schema(sources.body), JSON.stringify(schema.errors)).toBe(true);
    const [source] = sources.body.data as {
      labels: { resource: string; trafficSource: string };
      values: { timestamp: number; value: number }[];
    }[];
    expect(source!.labels).toEqual({ resource: web.id, trafficSource: 'total' });
    expect(source!.values.reduce((a, v) => a + v.value, 0)).toBe(total(bw));
    for (const v of source!.values) expect(v.timestamp % 3600).toBe(0);
  });
});

describe('the other series and the filters', () => {
  it('instance count, limits, targets, disk and what has no meaning here', async () => {
    // A one-off job runs in an instance of its own for 3 s (samples every second): not one of the service's instances.
    const job = await api.post(`/v1/services/${web.id}/jobs`, { startCommand: 'sleep 3' }, owner);
    expect(job.status, job.text).toBe(201);
    await waitFor('the job', async () =>
      ['succeeded', 'failed'].includes(
        (await api.get(`/v1/services/${web.id}/jobs/${job.body.id}`, owner)).body.status,
      ),
    );
    const jobSamples = await server.slipway.store.executeSql(`select 1 from metric_samples where instance_id = $1`, [
      job.body.id,
    ]);
    expect(jobSamples.rows).toEqual([]);
    const [count] = (await metric('instance-count')).body as Series[];
    expect(count!.values.map((v) => v.value)).toContain(1);
    expect(Math.max(...count!.values.map((v) => v.value))).toBe(1);
    const [cpuLimit] = (await metric('cpu-limit')).body as Series[];
    expect(cpuLimit!.values[0]).toMatchObject({ value: 50, unit: 'percent' }); // starter: half a core
    const [memoryLimit] = (await metric('memory-limit')).body as Series[];
    expect(memoryLimit!.values[0]!.value).toBe(512 * 1024 * 1024);
    expect((await metric('cpu-target')).body).toEqual([]); // no autoscaling
    const scaled = await api.put(
      `/v1/services/${web.id}/autoscaling`,
      {
        enabled: true,
        min: 1,
        max: 2,
        criteria: { cpu: { enabled: true, percentage: 60 }, memory: { enabled: false, percentage: 0 } },
      },
      owner,
    );
    expect(scaled.status, scaled.text).toBe(200);
    expect((await metric('cpu-target')).body[0].values[0].value).toBe(30); // 60 % of half a core
    expect((await metric('memory-target')).body).toEqual([]);
    const [capacity] = (await metric('disk-capacity')).body as Series[];
    expect(capacity!.values).toHaveLength(1);
    expect(capacity!.values[0]!.value).toBeGreaterThan(0);
    expect((await metric('disk-usage')).body[0].values[0].value).toBeGreaterThan(0); // the deploy's artifact
    for (const name of ['active-connections', 'replication-lag', 'task-runs-queued', 'task-runs-completed'])
      expect((await metric(name)).body, name).toEqual([]);
    // CPU and memory through Render's path and the seed's, the same series.
    const [cpu] = ((await metric('cpu')).body as Series[]).filter((s) => label(s, 'instance'));
    expect(cpu!.unit).toBe('percent');
    expect((await api.get(`/v1/metrics/${web.id}/cpu`, owner)).status).toBe(200);
  });

  it("lists the instances, hosts, status codes and paths seen, in Render's filter bodies", async () => {
    const [instances] = (await metric('filters/application')).body;
    expect(instances.filter).toBe('instance');
    expect(instances.values).toHaveLength(1);
    const filters = (await metric('filters/http')).body as { filter: string; values: string[] }[];
    expect(filters.find((f) => f.filter === 'host')!.values).toEqual([`${web.slug}.localhost`]);
    expect(filters.find((f) => f.filter === 'statusCode')!.values.sort()).toEqual(['200', '404', '500']);
    const only404 = (await metric('filters/http', '&statusCode=404')).body as { filter: string; values: string[] }[];
    expect(only404.find((f) => f.filter === 'statusCode')!.values).toEqual(['404']);
    const paths = (await metric('filters/path')).body as string[];
    expect(paths[0]).toBe('/users/*'); // most requested first
    expect(paths.sort()).toEqual(['/boom', '/missing', '/slow', '/users/*']);
  });
});

describe('bounds', () => {
  it('keeps at most 50 path groups per service, counting the rest under * (every request still counted)', async () => {
    const before = sent[200] + sent[404] + sent[500];
    const N = 400;
    const letters = (i: number) => String.fromCharCode(97 + Math.floor(i / 26), 97 + (i % 26));
    // 400 distinct paths: more than the 50 kept, however the intervals split them.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        viaRouter(server.slipway.routerPort, web.slug, `/page-${letters(i)}`, { agent }),
      ),
    );
    agent.destroy();
    const all = await waitFor(
      `the ${N} requests counted`,
      async () => {
        const body = (await metric('http-requests')).body as Series[];
        return total(body[0]) >= before + N ? body : undefined;
      },
      20_000,
      250,
    );
    expect(total(all[0])).toBe(before + N);
    expect(total((await metric('http-requests', '&path=*')).body[0])).toBeGreaterThan(0);
    expect((await metric('filters/path')).body).toContain('*');
    // Kept for the hour, not per interval: the server's whole life (under an hour) holds 50 groups and * at most.
    const groups = await server.slipway.store.executeSql(
      `select count(distinct split_part(instance_id, '|', 5)) as n from metric_samples
       where service_id = $1 and instance_id like $2`,
      [web.id, `${web.id}|%`],
    );
    expect(Number(groups.rows[0].n)).toBeLessThanOrEqual(51);
  });
});

describe('a Postgres datastore', () => {
  const pgOk = requireOrSkip('postgres/initdb', hasPostgresServer());
  it.runIf(pgOk)(
    "counts its client connections now (active-connections), samples its server's CPU and memory; another workspace's is 404",
    async () => {
      const created = await api.post('/v1/postgres', { name: 'metrics', plan: 'free' }, owner);
      expect(created.status, created.text).toBe(201);
      const url = `/v1/postgres/${created.body.id}`;
      await untilStatus(api, owner, url, 'available', 60_000);
      const conninfo = (await api.get(`${url}/connection-info`, owner)).body.externalConnectionString;
      const clients = [0, 1].map(() => new pg.Client({ connectionString: conninfo, connectionTimeoutMillis: 5000 }));
      try {
        for (const c of clients) await c.connect();
        const path = `/v1/metrics/active-connections?resource=${created.body.id}`;
        const res = await api.get(path, owner);
        expect(res.status, res.text).toBe(200);
        const schema = renderBody('/metrics/cpu');
        expect(schema(res.body), JSON.stringify(schema.errors)).toBe(true);
        const [series] = res.body as Series[];
        expect(series!.unit).toBe('connections');
        expect(label(series!, 'resource')).toBe(created.body.id);
        expect(series!.values).toHaveLength(1);
        expect(series!.values[0]!.value).toBeGreaterThanOrEqual(2);
        expect((await api.get(path, stranger)).status).toBe(404);
        // The server's processes (postmaster and backends) are sampled as the datastore's one instance.
        await clients[0]!.query('select count(*) from generate_series(1, 3000000)');
        const seriesOf = async (name: string) => {
          const r = await api.get(`/v1/metrics/${name}?resource=${created.body.id}&resolutionSeconds=60`, owner);
          expect(r.status, r.text).toBe(200);
          expect(schema(r.body), JSON.stringify(schema.errors)).toBe(true);
          return r.body as Series[];
        };
        await waitFor('CPU samples of the server', async () => (await seriesOf('cpu')).length > 0, 20_000, 250);
        const [cpu] = await seriesOf('cpu');
        expect(label(cpu!, 'instance')).toBe(created.body.id);
        expect(Math.max(...cpu!.values.map((v) => v.value))).toBeGreaterThan(0);
        const [memory] = await seriesOf('memory');
        expect(Math.max(...memory!.values.map((v) => v.value))).toBeGreaterThan(10 * 1024 * 1024);
        const [memoryLimit] = await seriesOf('memory-limit');
        expect(memoryLimit!.values[0]!.value).toBe(256 * 1024 * 1024); // the free plan's
        expect(await seriesOf('cpu-limit')).toEqual([]); // no CPU limit here
        expect((await api.get(`/v1/metrics/cpu?resource=${created.body.id}`, stranger)).status).toBe(404);
      } finally {
        for (const c of clients) await c.end().catch(() => undefined);
      }
    },
    90_000,
  );
});

describe('access and bad input', () => {
  it("refuses another workspace's resource (404), a missing one, and bad ranges (400)", async () => {
    expect((await metric('http-requests', '', stranger)).status).toBe(404);
    expect((await metric('filters/path', '', stranger)).status).toBe(404);
    const mixed = await api.get(`/v1/metrics/cpu?resource=${web.id}&resource=srv-d0000000000000000000`, owner);
    expect(mixed.status).toBe(404);
    const none = await api.get('/v1/metrics/cpu', owner);
    expect(none.status).toBe(400);
    expect(none.body.message).toMatch(/resource/);
    const backwards = await api.get(
      `/v1/metrics/http-requests?resource=${web.id}&startTime=2026-01-02T00:00:00Z&endTime=2026-01-01T00:00:00Z`,
      owner,
    );
    expect(backwards.status).toBe(400);
    expect(backwards.body.message).toMatch(/before endTime/);
    const huge = await api.get(
      `/v1/metrics/instance-count?resource=${web.id}&startTime=2020-01-01T00:00:00Z&resolutionSeconds=1`,
      owner,
    );
    expect(huge.status).toBe(400);
    expect(huge.body.message).toMatch(/points/);
  });
});
