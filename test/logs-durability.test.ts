/** Log collection across a Slipway restart, and the retention job. */
import { describe, expect, it } from 'vitest';
import { deployFixture } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { sleep, waitFor } from './helpers/process.js';
import { bootServer } from './helpers/server.js';

type Entry = { id: string; message: string };

/** Every "out <n>" line of a service, oldest first, through Render's time paging. */
async function allOutNumbers(api: Client, as: TestUser, serviceId: string): Promise<number[]> {
  const numbers: number[] = [];
  let start = new Date(Date.now() - 600_000).toISOString();
  const end = new Date().toISOString();
  for (;;) {
    const res = await api.get(`/v1/logs?resource=${serviceId}&text=out&direction=forward&limit=100&startTime=${encodeURIComponent(start)}&endTime=${encodeURIComponent(end)}`, as);
    expect(res.status).toBe(200);
    numbers.push(...(res.body.logs as Entry[]).map((e) => Number(/^out (\d+) /.exec(e.message)?.[1])));
    if (!res.body.hasMore) return numbers;
    start = res.body.nextStartTime;
  }
}

describe('log collection', () => {
  it('collects lines written while Slipway was stopped after it restarts: no loss, no duplicates', async () => {
    const first = await bootServer();
    let api = client(first.url);
    const owner = await signUp(api);
    const { service } = await deployFixture(api, owner, 'log-printer', { serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' } });
    await waitFor('some lines', async () => (await allOutNumbers(api, owner, service.id)).length > 20, 15_000);
    await first.stop(); // the app keeps printing
    await sleep(1500);
    const second = await bootServer({}, { dataDir: first.dataDir, databaseUrl: first.databaseUrl });
    try {
      api = client(second.url);
      const numbers = await waitFor('lines from before, during and after the restart', async () => {
        const n = await allOutNumbers(api, owner, service.id);
        return n.length > 150 ? n : undefined;
      }, 20_000, 200);
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
      // srv-a: 10 entries 8 days old, 10 from yesterday; srv-b: 300 entries of 100 bytes (30000 > the 10000 cap).
      await sql(`insert into logs (workspace_id, resource_id, type, level, message, timestamp)
        select $1, 'srv-a', 'app', 'info', 'old ' || n, now() - interval '8 days' + n * interval '1 second' from generate_series(1, 10) n`, [owner.workspaceId]);
      await sql(`insert into logs (workspace_id, resource_id, type, level, message, timestamp)
        select $1, 'srv-a', 'app', 'info', 'recent ' || n, now() - interval '1 day' + n * interval '1 second' from generate_series(1, 10) n`, [owner.workspaceId]);
      await sql(`insert into logs (workspace_id, resource_id, type, level, message, timestamp)
        select $1, 'srv-b', 'app', 'info', lpad(n::text, 100, '0'), now() - interval '1 hour' + n * interval '1 second' from generate_series(1, 300) n`, [owner.workspaceId]);
      await server.slipway.queue.boss.send('log-retention', {});
      await waitFor('the retention job', async () => {
        const { rows } = await sql(`select count(*)::int as n from logs where resource_id = 'srv-a' and message like 'old%'`);
        return rows[0].n === 0;
      }, 20_000, 200);
      const a = await sql(`select count(*)::int as n from logs where resource_id = 'srv-a'`);
      expect(a.rows[0].n).toBe(10);
      const b = await sql(`select count(*)::int as n, sum(octet_length(message))::int as bytes, min(message) as oldest from logs where resource_id = 'srv-b'`);
      expect(b.rows[0].bytes).toBeLessThanOrEqual(10000);
      expect(b.rows[0].n).toBe(100); // the newest 100 are kept
      expect(b.rows[0].oldest).toBe('201'.padStart(100, '0'));
    } finally {
      await server.close();
    }
  }, 60_000);
});
