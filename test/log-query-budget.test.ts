/**
 * Issue 29 §2: no log query holds the event loop. Over 20,000 stored lines of 1.5 KB, an expensive query (two text values such as
 * `/a[ab]{10}[y#]/`, over random a and b) answers within its time budget with what it found, `hasMore` and the window it has
 * not read, while /api/health stays fast; paging on finds every match once; a burst from one workspace waits its turn
 * (or gets 429) without delaying another's; the live tail's replay of the same filter does not hold the loop either.
 */
import { createIdleService } from './helpers/logs.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { sampleHealth } from './helpers/health-sampler.js';
import { waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

/**
 * Two values; only the first, ending in y, ever matches. "An `a` 11 characters before a y or #" over random a and b
 * keeps RE2's DFA busy (2,048 states): about 0.1 ms a line for the two in re2js, so the 15 MB of one service take
 * about a second whatever the store. No literal may be required: re2js first checks that a line holds each literal a
 * pattern needs (`/a[ab]{20}y/` skipped every line without a y at once, so only the store's reads could exceed the
 * budget, and on a fast machine they did not).
 */
const SPAN = 10;
const WORST = [...'yz'].map((last) => `/a[ab]{${SPAN}}[${last}#]/`);
const LINES = 20_000;
/** Every 1,000th line ends in y: the 20 the worst query finds. */
const MATCHES = Array.from({ length: LINES / 1000 }, (_, i) => i * 1000);
const BUDGET_SECONDS = 0.25;
/**
 * Before, health waited out the whole query (seconds: 37 s in the issue). bench/abuse.ts holds p99 to 100 ms with the
 * server in a process of its own; here the server shares the test's loop and the suite's CPU: a bound clear of that noise.
 */
const HEALTH_P99_MS = 500;

let server: TestServer;
let api: Client;
let owner: TestUser, viewer: TestUser, stranger: TestUser;
let serviceA: string, serviceB: string, strangerService: string;
/** About when the lines were stamped (line n: 20 minutes before it, plus n × 50 ms). */
let insertedAt: number;

const q = (params: Record<string, string | string[]>) =>
  Object.entries(params)
    .flatMap(([k, v]) => [v].flat().map((one) => `${k}=${encodeURIComponent(one)}`))
    .join('&');
const timed = async <T>(work: () => Promise<T>) => {
  const started = performance.now();
  const result = await work();
  return { result, ms: performance.now() - started };
};
const numberOf = (e: { message: string }) => Number(e.message.split(' ')[0]);

const createService = (as: TestUser, name: string) => createIdleService(api, as, name);

beforeAll(async () => {
  server = await bootServer({ SLIPWAY_LOG_QUERY_SECONDS: String(BUDGET_SECONDS) });
  api = client(server.url);
  [owner, stranger] = await Promise.all([signUp(api), signUp(api)]);
  viewer = await addMember(api, owner, 'viewer');
  [serviceA, serviceB, strangerService] = await Promise.all([
    createService(owner, 'loop-a'),
    createService(owner, 'loop-b'),
    createService(stranger, 'loop-bystander'),
  ]);
  insertedAt = Date.now();
  // Line n: "<n> " and 1,504 random a and b, ending in "a", SPAN b and y when n is a multiple of 1,000; even lines are
  // A's, odd B's, 50 ms apart.
  for (let from = 0; from < LINES; from += 5000)
    await server.slipway.store.executeSql(
      `insert into logs (workspace_id, resource_id, type, level, message, timestamp)
       select $1, case when n % 2 = 0 then $2 else $3 end, 'app', 'info',
         n || ' ' || translate((select string_agg(md5(n || '-' || k), '') from generate_series(1, 47) k),
           '0123456789abcdef', 'aaaaaaaabbbbbbbb') || case when n % 1000 = 0 then 'a' || repeat('b', $6::int) || 'y' else '' end,
         now() - interval '20 minutes' + n * interval '50 milliseconds'
       from generate_series($4::int, $5::int) n`,
      [owner.workspaceId, serviceA, serviceB, from, Math.min(LINES, from + 5000) - 1, SPAN],
    );
  await server.slipway.store.executeSql(
    `insert into logs (workspace_id, resource_id, type, level, message, timestamp)
     select $1, $2, 'app', 'info', 'bystander line ' || n, now() - interval '10 minutes' + n * interval '1 second'
     from generate_series(1, 20) n`,
    [stranger.workspaceId, strangerService],
  );
  // Each route compiles its schemas on first use: done before anything is timed.
  expect((await api.get('/api/health')).status).toBe(200);
  expect((await logs({ resource: serviceA, text: 'warm-up', limit: '1' })).status).toBe(200);
  const warm = subscribe({ resource: serviceA, text: 'warm-up' });
  await new Promise((resolve, reject) => warm.once('open', resolve).once('error', reject));
  warm.close();
}, 120_000);
afterAll(() => server?.close());

const subscribe = (params: Record<string, string | string[]>) =>
  new WebSocket(
    `${server.url.replace('http', 'ws')}/v1/logs/subscribe?${q({ ownerId: owner.workspaceId, ...params })}`,
    {
      headers: { cookie: `slipway_session=${viewer.cookie}`, 'x-requested-with': 'test' },
    },
  );
const logs = (params: Record<string, string | string[]>, as: TestUser = viewer) =>
  api.get(`/v1/logs?${q({ ownerId: as === stranger ? stranger.workspaceId : owner.workspaceId, ...params })}`, as);

describe('a log query within its budget', () => {
  it('an expensive query answers in about its time budget, cut short with the window left, while /api/health stays fast', async () => {
    const health = sampleHealth(server.url);
    const { result: res, ms } = await timed(() => logs({ resource: serviceA, text: WORST, limit: '100' }));
    const checks = await health.stop();
    expect(checks.failures).toEqual([]);
    expect(checks.p99).toBeLessThan(HEALTH_P99_MS);
    // Checked while the query ran (one check at a time, 20 ms apart: how many fit in its ~0.25 s depends on the load).
    expect(checks.count).toBeGreaterThan(1);
    expect(ms).toBeLessThan(BUDGET_SECONDS * 1000 + 1500);
    expect(res.status).toBe(200);
    expect(res.body.hasMore).toBe(true);
    // It read back from now and stopped part-way: the next window ends before the oldest line it had not read.
    expect(Date.parse(res.body.nextEndTime)).toBeLessThan(Date.now() - 60_000);
    expect(Date.parse(res.body.nextEndTime)).toBeGreaterThan(Date.now() - 20 * 60_000);
    for (const e of res.body.logs) expect(numberOf(e) % 1000).toBe(0);
  });

  it('paging on from each next window finds every match once, in order, across two services', async () => {
    /** Every match, following hasMore; and how many pages the budget (not the limit) ended. */
    const follow = async (limit: number, direction: 'backward' | 'forward', endTime?: string) => {
      const found: number[] = [];
      let window: Record<string, string> = {
        startTime: new Date(Date.now() - 30 * 60_000).toISOString(),
        ...(endTime ? { endTime } : {}),
      };
      let cutShort = 0;
      for (;;) {
        const res = await logs({
          resource: [serviceA, serviceB],
          text: WORST,
          limit: String(limit),
          direction,
          ...window,
        });
        expect(res.status).toBe(200);
        found.push(...res.body.logs.map(numberOf));
        if (!res.body.hasMore) return { found, cutShort };
        if (res.body.logs.length < limit) cutShort++;
        window = { startTime: res.body.nextStartTime, endTime: res.body.nextEndTime };
      }
    };
    const all = await follow(MATCHES.length, 'backward');
    expect(all.found).toEqual([...MATCHES].reverse());
    expect(all.cutShort).toBeGreaterThan(0);
    // Forward, a few at a time, over the older half (up to about line 9,500).
    const half = new Date(insertedAt - 20 * 60_000 + (LINES / 2 - 500) * 50).toISOString();
    expect((await follow(3, 'forward', half)).found).toEqual(MATCHES.slice(0, MATCHES.length / 2));
  }, 90_000);

  it("a burst from one workspace waits its turn or gets 429, and doesn't delay another workspace's query", async () => {
    const health = sampleHealth(server.url);
    const burst = Promise.all(Array.from({ length: 8 }, () => logs({ resource: serviceA, text: WORST })));
    await new Promise((r) => setTimeout(r, 100));
    const other = await timed(() => logs({ resource: strangerService, text: 'bystander' }, stranger));
    const replies = await burst;
    const checks = await health.stop();
    expect(other.result.status).toBe(200);
    expect(other.result.body.logs).toHaveLength(20);
    expect(other.ms).toBeLessThan(500);
    const statuses = replies.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    const refused = replies.find((r) => r.status === 429)!;
    expect(refused.body).toMatchObject({
      code: 'rate_limited',
      message: expect.stringMatching(/log queries are busy/),
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(checks.p99).toBeLessThan(HEALTH_P99_MS);
  });

  it("the live tail's replay of the same filter finds the matches without holding the loop", async () => {
    const health = sampleHealth(server.url);
    const ws = subscribe({
      resource: [serviceA, serviceB],
      text: WORST,
      startTime: new Date(Date.now() - 30 * 60_000).toISOString(),
    });
    const got: number[] = [];
    ws.on('message', (data) => got.push(numberOf(JSON.parse(String(data)))));
    try {
      await waitFor('the replay', async () => got.length >= MATCHES.length, 60_000);
    } finally {
      ws.terminate();
    }
    const checks = await health.stop();
    expect(got).toEqual(MATCHES);
    expect(checks.p99).toBeLessThan(HEALTH_P99_MS);
  });
});
