/**
 * Log streams on a real store, hub and TLS syslog receiver: a caught-up stream sends the entries the log hub hands it
 * without reading them back from the store, and still loses and repeats none when it starts behind, when another
 * process's entries reach the hub by a read, and when other workspaces' entries come between.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogStreamForwarder } from '../src/core/log-streams/forwarder.js';
import { createSyslogConnector } from '../src/integrations/syslog-sender.js';
import { createSecretBox } from '../src/lib/secret-box.js';
import { createLogHub } from '../src/observability/logs/hub.js';
import { openStore, type Store } from '../src/store/db.js';
import { createLogStreamRepo } from '../src/store/repos/log-streams.js';
import { createLogRepo, type NewLogEntry } from '../src/store/repos/logs.js';
import { waitFor } from './helpers/process.js';
import { startSyslogServer, type SyslogServer } from './helpers/syslog.js';

let dir: string;
let store: Store;
let syslog: SyslogServer;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'slipway-handover-'));
  store = await openStore({ dataDir: dir });
  syslog = await startSyslogServer(dir);
});
afterAll(async () => {
  await syslog?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('log stream hand-over', () => {
  it('sends what the hub hands a caught-up stream without store reads, and loses or repeats nothing', async () => {
    for (const id of ['tea-handover', 'tea-other'])
      await store.executeSql(`insert into workspaces (id, name, owner_user_id) values ($1, $1, 'usr-x')`, [id]);
    const logs = createLogRepo(store.db);
    const streams = createLogStreamRepo(store.db);
    let n = 0;
    const line = (workspaceId: string, number: number): NewLogEntry => ({
      workspaceId,
      resourceId: workspaceId === 'tea-handover' ? 'srv-handover' : 'srv-other',
      type: 'app',
      level: 'info',
      message: `line ${number}`,
      timeMs: Date.now(),
    });
    /** `mine` numbered lines of the stream's workspace, with `others` of another workspace between them. */
    const batch = (mine: number, others: number) => {
      const entries = Array.from({ length: mine }, () => line('tea-handover', n++));
      for (let i = 0; i < others; i++)
        entries.splice(Math.floor(Math.random() * entries.length), 0, line('tea-other', -1));
      return entries;
    };
    // A backlog from before the stream's runner starts: it is read from the store.
    await logs.insertBatch(batch(500, 100), [], false);

    const hub = createLogHub({ repo: logs, pollMs: 3_600_000, log: { warn: () => undefined } });
    await hub.start();
    await streams.putOwner(
      'tea-handover',
      { endpoint: `127.0.0.1:${syslog.port}`, sealedToken: null, preview: 'send' },
      0,
    );
    let reads = 0;
    const forwarder = createLogStreamForwarder({
      repo: { ...streams, forwardBatch: (...args) => (reads++, streams.forwardBatch(...args)) },
      box: createSecretBox(randomBytes(32)),
      connect: createSyslogConnector({
        allowPrivate: true,
        extraCa: readFileSync(syslog.caFile, 'utf8'),
        connectTimeoutMs: 5000,
        writeTimeoutMs: 5000,
      }),
      subscribe: (onRows) => hub.subscribe({ onRows }),
      log: { info: () => undefined, warn: () => undefined },
      settings: {
        batch: 200,
        span: 10_000,
        saveMs: 1000,
        pollMs: 3_600_000, // no polling: only the hub wakes the stream
        backoffMinMs: 100,
        backoffMaxMs: 1000,
        refreshMs: 3_600_000,
        stopMs: 5000,
      },
    });
    const received = () =>
      syslog.frames.filter((f) => f.appName === 'srv-handover').map((f) => Number(f.message.split(' ')[1]));
    try {
      await forwarder.start();
      // The first wake-up reads the backlog, in store batches, up to the newest entry.
      const first = await logs.insertBatch(batch(1, 0), [], false);
      hub.written(first);
      await waitFor('the backlog', async () => received().length === 501, 20_000, 20);
      const catchUpReads = reads;

      // Caught up: 60 batches from this process, with other workspaces' entries between.
      for (let i = 0; i < 60; i++) {
        hub.written(await logs.insertBatch(batch(20, i % 3 === 0 ? 30 : 0), [], false));
        await new Promise((r) => setTimeout(r, 5));
      }
      await waitFor('the live batches', async () => received().length === 501 + 60 * 20, 20_000, 20);
      expect(reads - catchUpReads).toBeLessThanOrEqual(2);

      // More at once than a stream keeps in memory: it reads them from the store instead.
      const readsBefore = reads;
      hub.written(await logs.insertBatch(batch(2500, 0), [], false));
      await waitFor('the large batch', async () => received().length === n, 20_000, 20);
      expect(reads - readsBefore).toBeGreaterThanOrEqual(2500 / 200);

      // Another process's entries reach the hub by a read (the hub was not handed them): none lost.
      const theirs = await logs.insertBatch(batch(40, 10), [], false);
      hub.poke(theirs.at(-1)!.id);
      hub.written(await logs.insertBatch(batch(25, 5), [], false));
      await waitFor('all of them', async () => received().length === n, 20_000, 20);
    } finally {
      await forwarder.stop();
      await hub.close();
    }
    expect(received()).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(syslog.invalid).toEqual([]);
    // Stopping saved the cursor at the newest entry the stream sent.
    expect((await streams.getOwner('tea-handover'))!.cursor).toBe(await logs.maxId());
  }, 60_000);
});
