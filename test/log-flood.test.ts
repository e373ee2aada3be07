/**
 * An app printing as fast as one Node process can must not take the API down (issue 10, 5c):
 * its lines are rate-limited per service (the excess dropped, counted and reported), and the
 * collector never holds the event loop that serves the API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployFixture } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { outNumbers } from './helpers/logs.js';
import { sleep, waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let api: Client;
let owner: TestUser;
let quietId: string;
let floodId: string;
let floodFrom: number;

/** Latency (ms) of sequential GET /api/health for `ms`. */
async function healthLatencies(ms: number): Promise<number[]> {
  const samples: number[] = [];
  for (const until = Date.now() + ms; Date.now() < until;) {
    const started = performance.now();
    const res = await fetch(`${server.url}/api/health`);
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    samples.push(performance.now() - started);
    await sleep(2); // a client polling, not a load test
  }
  return samples;
}
const p = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.ceil((q / 100) * values.length) - 1]!;

beforeAll(async () => {
  // The default log limits (the API's request rate limit is lifted: the test polls /api/health).
  server = await bootServer({ SLIPWAY_RATE_LIMIT_PER_MINUTE: '1000000' });
  api = client(server.url);
  owner = await signUp(api);
  // A well-behaved service (about 60 lines/s), then the flood.
  const quiet = await deployFixture(api, owner, 'log-printer', {
    serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
  });
  expect(quiet.deploy.status).toBe('live');
  quietId = quiet.service.id;
  floodFrom = Date.now();
  // It stops after a minute: enough for the test, and a bound on what it writes to disk (~30 MB/s).
  const flood = await deployFixture(api, owner, 'log-flood', {
    serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
    envVars: [{ key: 'STOP_AFTER_MS', value: '60000' }],
  });
  expect(flood.deploy.status).toBe('live');
  floodId = flood.service.id;
}, 120_000);
afterAll(() => server?.close());

describe('an app printing as fast as it can', () => {
  it('leaves GET /api/health p99 under 100 ms', async () => {
    await sleep(1000); // the flood is under way
    // Other processes share this machine's two cores: a window where they (not Slipway) held the
    // CPU is measured again, up to three 5 s windows, each held to the bound. Before the
    // fix every window failed by far (16 requests in 5 s, p99 1.5 s).
    const windows: Array<{ n: number; p50: number; p99: number; max: number }> = [];
    for (let i = 0; i < 3 && !windows.some((w) => w.p99 < 100); i++) {
      const samples = await healthLatencies(5000);
      windows.push({ n: samples.length, p50: p(samples, 50), p99: p(samples, 99), max: Math.max(...samples) });
    }
    console.log(
      'GET /api/health under a log flood (ms)',
      windows.map((w) => `n=${w.n} p50=${w.p50.toFixed(1)} p99=${w.p99.toFixed(1)} max=${w.max.toFixed(1)}`),
    );
    const best = windows.reduce((a, b) => (b.p99 < a.p99 ? b : a));
    expect(best.p99).toBeLessThan(100);
    expect(best.n).toBeGreaterThan(100); // a request every 50 ms at most: before the fix, 16 in 5 s
  }, 40_000);

  it('has its lines over the limit dropped, counted, and reported as an event and in its own log', async () => {
    const { logRateLines: rate, logBurstLines: burst } = server.config;
    const event = await waitFor(
      'a log_lines_dropped event',
      async () => {
        const res = await api.get(`/v1/services/${floodId}/events?type=log_lines_dropped`, owner);
        return res.body?.[0]?.event;
      },
      20_000,
      200,
    );
    expect(event.details).toMatchObject({ serviceId: floodId, limitLinesPerSecond: rate, burstLines: burst });
    expect(event.details.droppedLines).toBeGreaterThan(10_000);

    const notice = await waitFor(
      'the "dropped N log lines" line',
      async () => {
        const res = await api.get(`/v1/logs?resource=${floodId}&text=slipway: dropped&limit=5`, owner);
        return (res.body?.logs as Array<{ message: string }> | undefined)?.[0];
      },
      20_000,
      200,
    );
    expect(notice.message).toMatch(new RegExp(`^slipway: dropped (about )?\\d+ log lines .*\\(limit ${rate} lines/s`));

    // What was stored stays within the budget: the burst plus the rate since the flood began.
    const { rows } = await server.slipway.store.executeSql(
      `select count(*)::int as n from logs where resource_id = $1 and message like 'flood %'`,
      [floodId],
    );
    const seconds = (Date.now() - floodFrom) / 1000 + 1;
    expect(rows[0].n).toBeGreaterThan(rate);
    expect(rows[0].n).toBeLessThanOrEqual(burst + rate * seconds);
  }, 60_000);

  it('stores every line of a well-behaved service meanwhile', async () => {
    const numbers = await waitFor(
      "the quiet service's lines",
      async () => {
        const n = await outNumbers(api, owner, quietId);
        return n.length > 300 ? n : undefined;
      },
      20_000,
      500,
    );
    expect(numbers).toEqual(numbers.map((_, i) => i)); // 0, 1, 2, … in order, none missing, none twice
  }, 60_000);
});
