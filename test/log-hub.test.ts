/**
 * The log hub on a real store: rows this process committed go straight to subscribers, and a
 * writer's announcement (Postgres NOTIFY, which also reaches the process that wrote) is read
 * only when it names rows not yet delivered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogHub } from '../src/observability/logs/hub.js';
import { createLogRepo, type LogRow, type NewLogEntry } from '../src/store/repos/logs.js';
import { waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await bootServer();
});
afterAll(() => server.close());

describe('log hub', () => {
  it('delivers committed rows without reading them back, and reads an announced batch only when it is new', async () => {
    const repo = createLogRepo(server.slipway.store.db);
    const reads: string[] = [];
    const counted = {
      after: (id: number, limit: number) => (reads.push('after'), repo.after(id, limit)),
      maxId: () => (reads.push('maxId'), repo.maxId()),
    };
    const hub = createLogHub({ repo: counted, pollMs: 3_600_000, log: { warn: () => undefined } });
    await hub.start();
    const received: LogRow[] = [];
    hub.subscribe({ onRows: (rows) => received.push(...rows) });
    const line = (message: string): NewLogEntry => ({
      workspaceId: 'tea-hub',
      resourceId: 'srv-hub',
      type: 'app',
      level: 'info',
      message,
      timeMs: Date.now(),
    });
    reads.length = 0;

    const mine = await repo.insertBatch([line('one'), line('two')], [], false);
    hub.written(mine);
    hub.poke(mine.at(-1)!.id); // the announcement of our own batch
    expect(received.map((r) => r.message)).toEqual(['one', 'two']);
    expect(reads).toEqual([]);

    const theirs = await repo.insertBatch([line('three')], [], false); // another process's batch
    hub.poke(theirs.at(-1)!.id);
    await waitFor('the announced row', async () => received.length === 3);
    expect(received.map((r) => r.message)).toEqual(['one', 'two', 'three']);
    expect(reads).toContain('after');
    await hub.close();
  });
});
