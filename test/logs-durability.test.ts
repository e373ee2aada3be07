/** Log collection across a Slipway restart, and the retention job. */
import { describe, expect, it } from 'vitest';
import { createLogRepo } from '../src/store/repos/logs.js';
import { deployFixture } from './helpers/apps.js';
import { client, signUp } from './helpers/client.js';
import { outNumbers } from './helpers/logs.js';
import { sleep, waitFor } from './helpers/process.js';
import { bootServer } from './helpers/server.js';

describe('log collection', () => {
  it('collects lines written while Slipway was stopped after it restarts: no loss, no duplicates, whatever the log budget', async () => {
    // The app prints about 60 lines/s, under this budget; the backlog of the stop is bigger than the burst.
    const budget = { SLIPWAY_LOG_RATE_LINES: '100', SLIPWAY_LOG_BURST_LINES: '100' };
    const first = await bootServer(budget);
    let api = client(first.url);
    const owner = await signUp(api);
    const { service } = await deployFixture(api, owner, 'log-printer', {
      serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
    });
    await waitFor('some lines', async () => (await outNumbers(api, owner, service.id)).length > 20, 15_000);
    await first.stop(); // the app keeps printing
    await sleep(4000);
    const second = await bootServer(budget, { dataDir: first.dataDir, databaseUrl: first.databaseUrl });
    try {
      api = client(second.url);
      const numbers = await waitFor(
        'lines from before, during and after the restart',
        async () => {
          const n = await outNumbers(api, owner, service.id);
          return n.length > 350 ? n : undefined;
        },
        20_000,
        200,
      );
      expect(numbers).toEqual(numbers.map((_, i) => i)); // 0, 1, 2, … in order, none twice, none missing
    } finally {
      await second.close();
    }
  }, 90_000);

  it('retention deletes entries older than the retention period and beyond the per-service cap', async () => {
    const server = await bootServer({ SLIPWAY_LOG_RETENTION_DAYS: '7', SLIPWAY_LOG_MAX_BYTES_PER_SERVICE: '10000' });
    try {
      const api = client(server.url);
      const owner = await signUp(api);
      const sql = server.slipway.store.executeSql;
      // Written as the collector writes (which also counts each service's bytes): srv-a 10 entries
      // 8 days old and 10 from yesterday; srv-b 300 entries of 100 bytes (30000 > the 10000 cap).
      const entry = (resourceId: string, message: string, timeMs: number) => ({
        workspaceId: owner.workspaceId,
        resourceId,
        type: 'app' as const,
        level: 'info',
        message,
        timeMs,
      });
      const now = Date.now();
      await createLogRepo(server.slipway.store.db).insertBatch(
        [
          ...Array.from({ length: 10 }, (_, n) => entry('srv-a', `old ${n}`, now - 8 * 86_400_000 + n * 1000)),
          ...Array.from({ length: 10 }, (_, n) => entry('srv-a', `recent ${n}`, now - 86_400_000 + n * 1000)),
          ...Array.from({ length: 300 }, (_, n) =>
            entry('srv-b', String(n + 1).padStart(100, '0'), now - 3_600_000 + n * 1000),
          ),
        ],
        [],
        false,
      );
      const { boss } = server.slipway.queue;
      const jobId = (await boss.send('log-retention', {}))!;
      // The whole job, not its first step: age, then the cap, then ANALYZE.
      await waitFor(
        'the retention job',
        async () => (await boss.getJobById('log-retention', jobId))?.state === 'completed',
        20_000,
        200,
      );
      const { rows: oldLeft } = await sql(
        `select count(*)::int as n from logs where resource_id = 'srv-a' and message like 'old%'`,
      );
      expect(oldLeft[0].n).toBe(0);
      const a = await sql(`select count(*)::int as n from logs where resource_id = 'srv-a'`);
      expect(a.rows[0].n).toBe(10);
      const b = await sql(
        `select count(*)::int as n, sum(octet_length(message))::int as bytes, min(message) as oldest from logs where resource_id = 'srv-b'`,
      );
      expect(b.rows[0].bytes).toBeLessThanOrEqual(10000);
      expect(b.rows[0].n).toBe(100); // the newest 100 are kept
      expect(b.rows[0].oldest).toBe('201'.padStart(100, '0'));
      // The per-service byte counts the cap reads followed the deletions.
      const sizes = await sql(
        `select resource_id, bytes::int as bytes from log_sizes where resource_id in ('srv-a', 'srv-b') order by resource_id`,
      );
      expect(sizes.rows).toEqual([
        { resource_id: 'srv-a', bytes: 10 * 'recent 0'.length },
        { resource_id: 'srv-b', bytes: 100 * 100 },
      ]);
      // And the planner's statistics were refreshed (PGlite has no autovacuum to do it).
      const stats = await sql(`select reltuples from pg_class where relname = 'logs'`);
      expect(Number(stats.rows[0].reltuples)).toBeGreaterThanOrEqual(110);
    } finally {
      await server.close();
    }
  }, 60_000);
});
