/**
 * The request log after a restart: the data plane's access log holds every request served while the API was down, and
 * the tail hands them on at once. They must reach the store whole, and cost one lookup of their service's workspace,
 * not one each (thousands of queries on the store the restarting API needs, which held the request log back for
 * longer than the restart test waits). Requests as they are served keep to the service's request budget instead.
 */
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DropReport } from '../src/observability/logs/budget.js';
import { createLogs } from '../src/observability/logs/index.js';
import type { Store } from '../src/store/db.js';
import type { Repos } from '../src/store/repos/index.js';
import { openTestStore } from './helpers/store.js';
import { waitFor } from './helpers/wait.js';

const BACKLOG = 2000;
const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {}, child: () => silent } as never;

describe('request records handed on in a burst', () => {
  let store: Store;
  let repos: Repos;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ store, repos, remove: cleanup } = await openTestStore('slipway-request-log-'));
  }, 60_000);
  afterAll(() => cleanup?.());

  const logsWith = (opts: { workspaceOf: () => Promise<string>; onLinesDropped?: (r: DropReport) => void }) =>
    createLogs({
      repo: repos.logs,
      instances: async () => [],
      instanceDir: () => tmpdir(), // no instance is tailed here
      shared: store.kind === 'postgres',
      log: silent,
      workspaceOf: opts.workspaceOf,
      settings: {
        pollMs: 1000,
        flushMs: 5,
        streamBufferBytes: 1 << 20,
        pingMs: 30_000,
        queryBudget: { ms: 2000, bytes: 64 << 20 },
        rateLines: 100,
        burstLines: 100,
        requestRateLines: 100,
        requestBurstLines: 100,
      },
      onLinesDropped: async (r) => opts.onLinesDropped?.(r),
    });
  const request = (serviceId: string, i: number) => ({
    serviceId,
    method: 'GET',
    path: `/request-${i}`,
    host: 'backlog.localhost',
    statusCode: 200,
    durationMs: 1,
    bytesOut: 10,
  });
  const count = async (serviceId: string, like = '%') =>
    (
      await store.executeSql(
        `select count(*)::int as n from logs where resource_id = $1 and type = 'request' and message like $2`,
        [serviceId, like],
      )
    ).rows[0].n;

  it('stores all of them, after one lookup of the service', async () => {
    let lookups = 0;
    const logs = logsWith({
      workspaceOf: async () => {
        lookups++;
        await new Promise((r) => setTimeout(r, 1)); // a query takes a while: the records after it arrive meanwhile
        return 'tea-backlog';
      },
    });
    for (let i = 0; i < BACKLOG; i++)
      // Far over the budget, but served while Slipway was down.
      logs.onRequest({ ...request('srv-backlog', i), backlog: true });
    await waitFor(
      'every request in the store',
      async () => (await count('srv-backlog')) === BACKLOG || undefined,
      20_000,
    );
    expect(lookups).toBe(1);
    await logs.close();
  }, 60_000);

  it('reports the backlog requests it could not hold while the store caught up', async () => {
    const reports: DropReport[] = [];
    const logs = logsWith({ workspaceOf: async () => 'tea-outage', onLinesDropped: (r) => reports.push(r) });
    const served = 55_000; // more than the sink holds at once (50,000)
    for (let i = 0; i < served; i++) logs.onRequest({ ...request('srv-outage', i), backlog: true });
    await logs.close();
    const stored = (await count('srv-outage')) - (await count('srv-outage', 'slipway: dropped%'));
    expect(stored).toBeGreaterThanOrEqual(50_000);
    expect(reports).toMatchObject([{ serviceId: 'srv-outage', type: 'request', droppedLines: served - stored }]);
  }, 120_000);

  it('keeps requests as they are served to the request budget, and reports what it dropped', async () => {
    const reports: DropReport[] = [];
    const logs = logsWith({ workspaceOf: async () => 'tea-flood', onLinesDropped: (r) => reports.push(r) });
    for (let i = 0; i < BACKLOG; i++) logs.onRequest(request('srv-flood', i));
    await logs.close(); // writes what is pending and sends the reports due
    const kept = (await count('srv-flood')) - (await count('srv-flood', 'slipway: dropped%'));
    expect(kept).toBeGreaterThanOrEqual(100); // the burst
    expect(kept).toBeLessThan(150); // and what the rate (100/s) refilled meanwhile, not the 2,000
    expect(await count('srv-flood', 'slipway: dropped % request log lines%')).toBe(1);
    expect(reports).toMatchObject([{ serviceId: 'srv-flood', type: 'request', droppedLines: BACKLOG - kept }]);
  }, 60_000);
});
