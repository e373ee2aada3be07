/**
 * The request log after a restart: the data plane's access log holds every request served while the API was down, and
 * the tail hands them on at once. They must reach the store whole, and cost one lookup of their service's workspace,
 * not one each (thousands of queries on the store the restarting API needs, which held the request log back for
 * longer than the restart test waits).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createLogs } from '../src/observability/logs/index.js';
import { openStore, type Store } from '../src/store/db.js';
import { createRepos, type Repos } from '../src/store/repos/index.js';
import { createTestDatabase, TEST_DATABASE_URL } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

const BACKLOG = 2000;
const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {}, child: () => silent } as never;

describe('request records handed on in a burst', () => {
  let store: Store;
  let repos: Repos;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-request-log-'));
    const database = TEST_DATABASE_URL ? await createTestDatabase(TEST_DATABASE_URL) : undefined;
    store = await openStore(
      loadConfig({ SLIPWAY_DATA_DIR: dataDir, DATABASE_URL: database?.url ?? '', SLIPWAY_SECRET_KEY: '' }),
    );
    repos = createRepos(store.db);
    cleanup = async () => {
      await store.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    };
  }, 60_000);
  afterAll(() => cleanup?.());

  it('stores all of them, after one lookup of the service', async () => {
    let lookups = 0;
    const logs = createLogs({
      repo: repos.logs,
      instances: async () => [],
      instanceDir: () => tmpdir(), // no instance is tailed here
      shared: store.kind === 'postgres',
      log: silent,
      workspaceOf: async () => {
        lookups++;
        await new Promise((r) => setTimeout(r, 1)); // a query takes a while: the records after it arrive meanwhile
        return 'tea-backlog';
      },
      settings: {
        pollMs: 1000,
        flushMs: 5,
        streamBufferBytes: 1 << 20,
        pingMs: 30_000,
        rateLines: 100,
        burstLines: 100,
      },
      onLinesDropped: async () => undefined,
    });
    for (let i = 0; i < BACKLOG; i++)
      logs.onRequest({
        serviceId: 'srv-backlog',
        method: 'GET',
        path: `/while-down-${i}`,
        host: 'backlog.localhost',
        statusCode: 200,
        durationMs: 1,
        bytesOut: 10,
      });
    const count = async () =>
      (await store.executeSql(`select count(*)::int as n from logs where resource_id = 'srv-backlog'`)).rows[0].n;
    await waitFor('every request in the store', async () => (await count()) === BACKLOG || undefined, 20_000);
    expect(lookups).toBe(1);
  }, 60_000);
});
