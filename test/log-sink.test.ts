/**
 * The log sink on the embedded store (PGlite, in this process): a backlog drains in statements of up to about 25 ms,
 * each followed by a pause as long, so lines catch up with the live tail and the API still gets the store half the
 * time. Statements sized to 10 ms drained a backlog at about 3,600 rows/s on a slow machine, fewer than two services
 * print at their default budget (6,700 rows/s now).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogSink } from '../src/observability/logs/sink.js';
import { openStore, type Store } from '../src/store/db.js';
import { createLogRepo, MAX_INSERT, type NewLogEntry } from '../src/store/repos/logs.js';
import { waitFor } from './helpers/process.js';

let store: Store;
let dataDir: string;
beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-sink-'));
  store = await openStore({ dataDir });
});
afterAll(async () => {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const line = (n: number): NewLogEntry => ({
  workspaceId: 'tea-sink',
  resourceId: 'srv-sink',
  instanceId: 'srv-sink-abcde',
  deployId: 'dep-sink',
  type: 'app',
  level: 'info',
  message: `out ${n} ${Date.now()} some text an app would print`,
  timeMs: Date.now(),
});

describe('log sink on PGlite', () => {
  it('drains a backlog in statements of up to about 25 ms, with a pause as long after each', async () => {
    const repo = createLogRepo(store.db);
    const writes: Array<{ rows: number; startedAt: number; ms: number }> = [];
    const timed = {
      async insertBatch(...args: Parameters<typeof repo.insertBatch>) {
        const startedAt = performance.now();
        const rows = await repo.insertBatch(...args);
        writes.push({ rows: args[0].length, startedAt, ms: performance.now() - startedAt });
        return rows;
      },
    };
    let committed = 0;
    const sink = createLogSink({
      repo: timed,
      flushMs: 5,
      shared: false,
      inProcess: true,
      onCommitted: (rows) => (committed += rows.length),
      log: { warn: () => undefined } as never,
    });
    const total = 12_000;
    for (let n = 0; n < total; n += 1000) sink.push(Array.from({ length: 1000 }, (_, i) => line(n + i)));
    await waitFor('the backlog written', async () => committed === total, 60_000, 10);

    // Once the sink has measured what a row costs, a write takes what fits in its 25 ms (or MAX_INSERT rows).
    const settled = writes.slice(Math.floor(writes.length / 2), -1);
    expect(settled.length).toBeGreaterThan(0);
    const full = settled.map((w) => (w.rows >= MAX_INSERT ? 25 : w.ms)).sort((a, b) => a - b);
    expect(full[Math.floor(full.length / 2)]).toBeGreaterThan(15);
    // Each write waits after the one before for at least as long as that one took: the API's half of the store.
    for (let i = 1; i < writes.length; i++) {
      const before = writes[i - 1]!;
      expect(writes[i]!.startedAt - (before.startedAt + before.ms)).toBeGreaterThanOrEqual(before.ms * 0.9);
    }
  }, 90_000);
});
