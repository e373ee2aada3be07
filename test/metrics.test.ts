/**
 * Metrics: the sampler on real fixture apps (one burning CPU, one holding 100 MiB, one idle),
 * Render's series shape, history downsampled by the database, the roll-up job, router
 * traffic, access rules, and Slipway's own Prometheus metrics.
 */
import { Ajv } from 'ajv';
import ajvFormats from 'ajv-formats';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { METRICS_ROLLUP_QUEUE } from '../src/jobs/metrics-rollup.js';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { addMember, client, createApiKey, signUp, type Client, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { loadRenderReference } from './helpers/render-reference.js';
import { bootServer, type TestServer } from './helpers/server.js';

/** Render's 200 body of GET /metrics/cpu (and /memory). */
const renderSeries = (() => {
  const doc = loadRenderReference();
  const ajv = new Ajv({ strict: false, allErrors: true });
  (ajvFormats as unknown as typeof ajvFormats.default)(ajv);
  ajv.addSchema(doc, 'render');
  return ajv.getSchema('render#/paths/~1metrics~1cpu/get/responses/200/content/application~1json/schema')!;
})();

const OPERATOR_TOKEN = 'operator-token-for-metrics-tests-0123456789';
const MiB = 1024 * 1024;

let server: TestServer;
let api: Client;
let owner: TestUser, viewer: TestUser, stranger: TestUser;
let burner: { id: string; slug: string }, hog: { id: string }, idle: { id: string; slug: string };

interface Series {
  labels: { field: string; value: string }[];
  unit: string;
  values: { timestamp: string; value: number; unit: string }[];
}
const label = (s: Series, field: string) => s.labels.find((l) => l.field === field)?.value;
const instanceSeries = (body: Series[]) => body.filter((s) => label(s, 'instance'));
const serviceSeries = (body: Series[]) => body.find((s) => !label(s, 'instance'));

function expectRenderShape(body: Series[], serviceId: string, unit: string) {
  expect(Array.isArray(body)).toBe(true);
  expect(renderSeries(body), JSON.stringify(renderSeries.errors)).toBe(true);
  for (const s of body) {
    expect(Object.keys(s).sort()).toEqual(['labels', 'unit', 'values']);
    expect(s.unit).toBe(unit);
    expect(label(s, 'resource')).toBe(serviceId);
    for (const v of s.values) {
      expect(typeof v.value).toBe('number');
      expect(new Date(v.timestamp).toISOString()).toBe(v.timestamp);
    }
  }
}

/** Polls `path` until `ready` says the series are there. */
const seriesWhen = (path: string, ready: (body: Series[]) => boolean, timeoutMs = 20_000) =>
  waitFor(
    `series at ${path}`,
    async () => {
      const res = await api.get(path, owner);
      return res.status === 200 && ready(res.body) ? (res.body as Series[]) : undefined;
    },
    timeoutMs,
    250,
  );

/** Inserts samples directly (known values at known past times) for deterministic history checks. */
async function insertSamples(
  rows: {
    serviceId: string;
    instanceId: string;
    resolution?: number;
    at: Date;
    cpu: number;
    memory: number;
    cpuMax?: number;
    cpuMin?: number;
  }[],
) {
  for (const r of rows) {
    await server.slipway.store.executeSql(
      `insert into metric_samples (service_id, instance_id, resolution, "timestamp", cpu_percent, cpu_max, cpu_min, memory_bytes) values ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        r.serviceId,
        r.instanceId,
        r.resolution ?? 0,
        r.at.toISOString(),
        r.cpu,
        r.cpuMax ?? null,
        r.cpuMin ?? null,
        r.memory,
      ],
    );
  }
}
const countRows = async (where: string, values: unknown[]) =>
  Number(
    (await server.slipway.store.executeSql(`select count(*)::int as n from metric_samples where ${where}`, values))
      .rows[0].n,
  );

beforeAll(async () => {
  server = await bootServer({ SLIPWAY_METRICS_INTERVAL: '1.5', SLIPWAY_OPERATOR_TOKEN: OPERATOR_TOKEN });
  api = client(server.url);
  [owner, stranger] = await Promise.all([signUp(api), signUp(api)]);
  viewer = await addMember(api, owner, 'viewer');
  const [b, h, i] = await Promise.all([
    deployFixture(api, owner, 'cpu-burner', { serviceDetails: { runtime: 'node', plan: 'standard' } }),
    deployFixture(api, owner, 'memory-hog', { serviceDetails: { runtime: 'node', plan: 'starter' } }),
    deployFixture(api, owner, 'node-web', { serviceDetails: { runtime: 'node', plan: 'starter' } }),
  ]);
  for (const d of [b, h, i]) if (d.deploy.status !== 'live') throw new Error(`fixture deploy ended ${d.deploy.status}`);
  burner = { id: b.service.id, slug: b.service.slug };
  hog = { id: h.service.id };
  idle = { id: i.service.id, slug: i.service.slug };
}, 120_000);
afterAll(() => server?.close());

describe('current CPU and memory (GET /v1/metrics/:serviceId/cpu|memory)', () => {
  it("reports a CPU burner above half a core and an idle app low, in Render's series shape", async () => {
    // The first sample of a process is its lifetime average; later ones cover one interval.
    const body = await seriesWhen(`/v1/metrics/${burner.id}/cpu`, (b) =>
      instanceSeries(b).some((s) => s.values[0]!.value > 50),
    );
    expectRenderShape(body, burner.id, 'percent');
    const [instance] = instanceSeries(body);
    expect(instance!.values).toHaveLength(1);
    expect(instance!.values[0]!.value).toBeLessThan(110); // one thread: at most one core (plus rounding)
    expect(serviceSeries(body)?.values[0]!.value).toBeGreaterThan(50); // one instance: the service is that instance

    // Its first sample may still be its start's average (Node's start-up CPU, slower on a loaded machine): a later one,
    // over one interval, is low. A reading that stayed high (another instance's CPU counted in) times out.
    const quiet = await seriesWhen(
      `/v1/metrics/${idle.id}/cpu`,
      (b) => instanceSeries(b).length === 1 && instanceSeries(b)[0]!.values[0]!.value < 20,
    );
    expect(instanceSeries(quiet)[0]!.values[0]!.value).toBeLessThan(20);
    // Render's ?resource= form names the same service.
    expect((await api.get(`/v1/metrics/${burner.id}/cpu?resource=${burner.id}`, owner)).status).toBe(200);
  });

  it("reports the memory hog's process-tree RSS above 80 MiB and below its plan's 512 MB", async () => {
    const body = await seriesWhen(`/v1/metrics/${hog.id}/memory`, (b) => instanceSeries(b).length === 1);
    expectRenderShape(body, hog.id, 'bytes');
    const rss = instanceSeries(body)[0]!.values[0]!.value;
    expect(rss).toBeGreaterThan(80 * MiB);
    expect(rss).toBeLessThan(512 * MiB);
    const idleRss = instanceSeries(
      await seriesWhen(`/v1/metrics/${idle.id}/memory`, (b) => instanceSeries(b).length === 1),
    )[0]!.values[0]!.value;
    expect(idleRss).toBeLessThan(rss - 50 * MiB);
    // Where the runtime put the instance in a cgroup, its usage is there too (and counts the same 100 MiB).
    const cgroup = await api.get(`/v1/metrics/${hog.id}/memory?source=cgroup`, owner);
    expect(cgroup.status).toBe(200);
    for (const s of instanceSeries(cgroup.body)) expect(s.values[0]!.value).toBeGreaterThan(80 * MiB);
    // The runtime's cgroup parent exists when it could make cgroups on this machine.
    if (existsSync('/sys/fs/cgroup/memory/slipway') || existsSync('/sys/fs/cgroup/slipway'))
      expect(instanceSeries(cgroup.body)).toHaveLength(1);
  });

  it('lets a viewer read; another workspace gets 404; bad parameters get 400', async () => {
    expect((await api.get(`/v1/metrics/${burner.id}/cpu`, viewer)).status).toBe(200);
    for (const path of [
      `/v1/metrics/${burner.id}/cpu`,
      `/v1/metrics/${hog.id}/memory`,
      `/v1/services/${idle.id}/metrics/history?metric=cpu`,
      '/v1/metrics/srv-nope/cpu',
    ]) {
      const res = await api.get(path, stranger);
      expect(res.status, path).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    const bad = [
      `/v1/services/${idle.id}/metrics/history?metric=disk`,
      `/v1/services/${idle.id}/metrics/history`,
      `/v1/services/${idle.id}/metrics/history?metric=cpu&aggregationMethod=SUM`,
      `/v1/services/${idle.id}/metrics/history?metric=cpu&resolutionSeconds=1`, // below the 1.5 s interval
      `/v1/services/${idle.id}/metrics/history?metric=cpu&startTime=2024-01-02T00:00:00Z&endTime=2024-01-01T00:00:00Z`,
      `/v1/services/${idle.id}/metrics/history?metric=cpu&startTime=2020-01-01T00:00:00Z&resolutionSeconds=2`, // too many points
      `/v1/services/${idle.id}/metrics/history?metric=cpu&startTime=yesterday`,
      `/v1/metrics/${burner.id}/cpu?resource=${idle.id}`,
      `/v1/metrics/${burner.id}/cpu?relativeTo=socket`,
    ];
    for (const path of bad) {
      const res = await api.get(path, owner);
      expect(res.status, path).toBe(400);
      expect(['bad_request', 'validation_failed'], path).toContain(res.body.code);
      expect(res.body.id).toBe(res.headers.get('request-id'));
    }
  });
});

describe('history (GET /v1/services/:serviceId/metrics/history)', () => {
  // Two instances, a sample every 10 s for two minutes, three hours ago (no real samples there).
  const t0 = new Date(Math.floor((Date.now() - 3 * 3_600_000) / 3_600_000) * 3_600_000);
  const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);
  const range = `startTime=${t0.toISOString()}&endTime=${at(120).toISOString()}`;

  beforeAll(async () => {
    const rows = [];
    for (let i = 0; i < 12; i++) {
      rows.push({ serviceId: idle.id, instanceId: 'syn-a', at: at(i * 10), cpu: (i % 6) * 10, memory: 100 * MiB + i }); // 0..50 per minute
      rows.push({ serviceId: idle.id, instanceId: 'syn-b', at: at(i * 10), cpu: 100, memory: 200 * MiB });
    }
    await insertSamples(rows);
  });

  it('groups samples into resolutionSeconds buckets, per instance and for the service, with AVG/MAX/MIN', async () => {
    const avg = (
      await api.get(`/v1/services/${idle.id}/metrics/history?metric=cpu&${range}&resolutionSeconds=60`, owner)
    ).body as Series[];
    expectRenderShape(avg, idle.id, 'percent');
    const a = avg.find((s) => label(s, 'instance') === 'syn-a')!;
    expect(a.values.map((v) => v.timestamp)).toEqual([t0.toISOString(), at(60).toISOString()]);
    expect(a.values.map((v) => v.value)).toEqual([25, 25]);
    expect(serviceSeries(avg)!.values.map((v) => v.value)).toEqual([62.5, 62.5]); // every sample of both instances
    const method = async (m: string) =>
      (
        (
          await api.get(
            `/v1/services/${idle.id}/metrics/history?metric=cpu&${range}&resolutionSeconds=60&aggregationMethod=${m}`,
            owner,
          )
        ).body as Series[]
      )
        .find((s) => label(s, 'instance') === 'syn-a')!
        .values.map((v) => v.value);
    expect(await method('MAX')).toEqual([50, 50]);
    expect(await method('MIN')).toEqual([0, 0]);
    // Twenty-second buckets: six of them, each averaging two samples.
    const fine = (
      await api.get(
        `/v1/services/${idle.id}/metrics/history?metric=cpu&${range}&resolutionSeconds=20&instance=syn-a`,
        owner,
      )
    ).body as Series[];
    expect(fine).toHaveLength(1); // an instance filter leaves out the service series
    expect(fine[0]!.values.map((v) => v.value)).toEqual([5, 25, 45, 5, 25, 45]);
    // Relative to the plan's limit: starter has half a core, so percentages double.
    const limit = (
      await api.get(
        `/v1/services/${idle.id}/metrics/history?metric=cpu&${range}&resolutionSeconds=60&instance=syn-b&relativeTo=limit`,
        owner,
      )
    ).body as Series[];
    expect(limit[0]!.values.map((v) => v.value)).toEqual([200, 200]);
    const memory = (
      await api.get(
        `/v1/services/${idle.id}/metrics/history?metric=memory&${range}&resolutionSeconds=120&instance=syn-b`,
        owner,
      )
    ).body as Series[];
    expect(memory[0]).toMatchObject({ unit: 'bytes', values: [{ timestamp: t0.toISOString(), value: 200 * MiB }] });
  });

  it('has the real samples of a running app, at the resolution asked', async () => {
    const start = new Date(Date.now() - 60_000).toISOString();
    const body = await seriesWhen(
      `/v1/services/${burner.id}/metrics/history?metric=cpu&startTime=${start}&resolutionSeconds=2`,
      // On a busy machine the burner may get less than half a core for a while: wait for a bucket where it had more.
      (b) => {
        const values = instanceSeries(b)[0]?.values ?? [];
        return values.length >= 2 && values.some((v) => v.value > 50);
      },
    );
    const values = instanceSeries(body)[0]!.values;
    expect(values.length).toBeGreaterThanOrEqual(2);
    expect(values.some((v) => v.value > 50)).toBe(true);
    for (const v of values) expect(new Date(v.timestamp).getTime() % 2000).toBe(0);
  });

  it('counts requests and bytes through the router (http_requests, bandwidth)', async () => {
    for (let i = 0; i < 20; i++)
      expect((await viaRouter(server.slipway.routerPort, idle.slug, `/?n=${i}`)).status).toBe(200);
    const start = new Date(Date.now() - 300_000).toISOString();
    const total = (b: Series[]) => (b[0]?.values ?? []).reduce((sum, v) => sum + v.value, 0);
    const requests = await seriesWhen(
      `/v1/services/${idle.id}/metrics/history?metric=http_requests&startTime=${start}&resolutionSeconds=60`,
      (b) => total(b) >= 20,
    );
    expect(requests).toHaveLength(1); // one series for the service
    expect(requests[0]!.unit).toBe('requests');
    expect(total(requests)).toBeLessThan(30);
    const bandwidth = (
      await api.get(
        `/v1/services/${idle.id}/metrics/history?metric=bandwidth&startTime=${start}&resolutionSeconds=60`,
        owner,
      )
    ).body as Series[];
    expect(bandwidth[0]!.unit).toBe('bytes');
    expect(total(bandwidth)).toBeGreaterThan(20 * 200); // each JSON reply is several hundred bytes
  });
});

describe('roll-up and expiry (the metrics-rollup job)', () => {
  it('rolls raw samples older than an hour into 60 s buckets, those older than 7 days into hours, and drops those beyond 30 days', async () => {
    const day = 86_400_000;
    const minuteStart = new Date(Math.floor((Date.now() - 2 * 3_600_000) / 3_600_000) * 3_600_000);
    const hourStart = new Date(Math.floor((Date.now() - 8 * day) / 3_600_000) * 3_600_000);
    const rows = [];
    for (let i = 0; i < 6; i++)
      rows.push({
        serviceId: idle.id,
        instanceId: 'old-raw',
        at: new Date(minuteStart.getTime() + i * 10_000),
        cpu: i * 10,
        memory: 1000 + i,
      });
    for (let i = 0; i < 60; i++)
      rows.push({
        serviceId: idle.id,
        instanceId: 'old-minute',
        resolution: 60,
        at: new Date(hourStart.getTime() + i * 60_000),
        cpu: i < 30 ? 10 : 30,
        cpuMax: i === 7 ? 99 : 40,
        cpuMin: 5,
        memory: 1000,
      });
    rows.push({ serviceId: idle.id, instanceId: 'ancient', at: new Date(Date.now() - 31 * day), cpu: 1, memory: 1 });
    rows.push({
      serviceId: idle.id,
      instanceId: 'recent-raw',
      at: new Date(Date.now() - 30 * 60_000),
      cpu: 1,
      memory: 1,
    });
    await insertSamples(rows);

    await server.slipway.queue.boss.send(METRICS_ROLLUP_QUEUE, {});
    await waitFor('the roll-up job', async () => (await countRows(`instance_id = 'ancient'`, [])) === 0, 15_000, 200);

    expect(await countRows(`instance_id = 'old-raw' and resolution = 0`, [])).toBe(0);
    expect(await countRows(`instance_id = 'old-raw' and resolution = 60`, [])).toBe(1);
    expect(await countRows(`instance_id = 'recent-raw' and resolution = 0`, [])).toBe(1); // within the hour: kept raw
    expect(await countRows(`instance_id = 'old-minute' and resolution = 60`, [])).toBe(0);
    expect(await countRows(`instance_id = 'old-minute' and resolution = 3600`, [])).toBe(1);

    // The roll-ups keep what AVG, MAX and MIN need.
    const query = (start: Date, seconds: number, m: string) =>
      api.get(
        `/v1/services/${idle.id}/metrics/history?metric=cpu&startTime=${start.toISOString()}&endTime=${new Date(start.getTime() + seconds * 1000).toISOString()}&resolutionSeconds=${seconds}&aggregationMethod=${m}`,
        owner,
      );
    const valueOf = async (start: Date, seconds: number, instance: string, m: string) =>
      ((await query(start, seconds, m)).body as Series[])
        .find((s) => label(s, 'instance') === instance)!
        .values.map((v) => v.value);
    expect(await valueOf(minuteStart, 60, 'old-raw', 'AVG')).toEqual([25]);
    expect(await valueOf(minuteStart, 60, 'old-raw', 'MAX')).toEqual([50]);
    expect(await valueOf(minuteStart, 60, 'old-raw', 'MIN')).toEqual([0]);
    expect(await valueOf(hourStart, 3600, 'old-minute', 'AVG')).toEqual([20]);
    expect(await valueOf(hourStart, 3600, 'old-minute', 'MAX')).toEqual([99]);
    expect(await valueOf(hourStart, 3600, 'old-minute', 'MIN')).toEqual([5]);
  });
});

describe("GET /metrics (Slipway's own Prometheus metrics)", () => {
  it('answers the operator token with request, deploy, queue and resource metrics; 401 without credentials, 403 for users', async () => {
    expect((await api.get('/metrics')).status).toBe(401);
    const key = await createApiKey(api, owner);
    for (const caller of [owner, { token: key.token }]) {
      const res = await api.get('/metrics', caller);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
    await api.get(`/v1/metrics/${burner.id}/cpu`, owner);
    const res = await api.get('/metrics', { token: OPERATOR_TOKEN });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.text).toMatch(
      /slipway_http_requests_total\{method="GET",route="\/v1\/metrics\/:serviceId\/cpu",status_code="200"\} \d+/,
    );
    expect(res.text).toMatch(
      /slipway_http_request_duration_seconds_bucket\{le="0.1",method="GET",route="\/v1\/metrics\/:serviceId\/cpu"\} \d+/,
    );
    expect(res.text).toMatch(/slipway_deploys_total\{status="live"\} [1-9]/);
    expect(res.text).toMatch(/slipway_deploy_duration_seconds_count\{status="live"\} [1-9]/);
    expect(res.text).toMatch(/slipway_queue_depth\{queue="maintenance"\} \d+/);
    expect(res.text).toMatch(/slipway_resources\{kind="instance",status="running"\} [1-9]/);
    expect(res.text).toMatch(/slipway_metric_samples_total [1-9]/);
    expect(res.text).toContain('slipway_log_lines_ingested_total');
    expect(res.text).toContain('slipway_log_subscribers');
    // Both move: stored log lines (the router requests of the tests above are some), open subscriptions.
    const scrape = async () => (await api.get('/metrics', { token: OPERATOR_TOKEN })).text;
    await waitFor('request lines counted', async () =>
      /^slipway_log_lines_ingested_total\{type="request"\} [1-9]/m.test(await scrape()),
    );
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/v1/logs/subscribe`, {
      headers: { cookie: `slipway_session=${owner.cookie}`, 'x-requested-with': 'test' },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    expect(await scrape()).toMatch(/^slipway_log_subscribers 1$/m);
    ws.close();
    await waitFor('the subscriber gone', async () => /^slipway_log_subscribers 0$/m.test(await scrape()));
    // Not part of the /v1 API: not in the OpenAPI document.
    expect(Object.keys((await api.get('/v1/openapi.json')).body.paths)).not.toContain('/metrics');
  });
});
