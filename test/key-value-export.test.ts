/**
 * Key-value exports through the API, on a real local server: an RDB snapshot that a fresh redis-server loads with every
 * key; viewers cannot download it, other workspaces get 404s.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findKeyValueServer } from '../src/provisioners/keyvalue/local.js';
import { freePort } from '../src/runtime/local/ports.js';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { untilStatus } from './helpers/datastores.js';
import { waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

const serverPath = findKeyValueServer();
let server: TestServer;
let api: Client;
let owner: TestUser, viewer: TestUser, stranger: TestUser;
beforeAll(async () => {
  if (!serverPath) return;
  server = await bootServer();
  api = client(server.url);
  owner = await signUp(api);
  viewer = await addMember(api, owner, 'viewer');
  stranger = await signUp(api);
}, 60_000);
afterAll(() => server?.close());

describe.skipIf(!serverPath)('key-value exports', () => {
  it("snapshots the server's data as an RDB file that a fresh server loads; viewers and other workspaces are refused", async () => {
    const created = await api.post('/v1/key-value', { name: 'sessions', plan: 'starter' }, owner);
    expect(created.status, created.text).toBe(201);
    const url = `/v1/key-value/${created.body.id}`;
    await untilStatus(api, owner, url, 'available');
    const kv = new Redis((await api.get(`${url}/connection-info`, owner)).body.externalConnectionString, {
      maxRetriesPerRequest: 0,
    });
    const keys = Array.from({ length: 300 }, (_, i) => `session:${i}`);
    try {
      for (const key of keys) await kv.set(key, `value of ${key}`);
    } finally {
      kv.disconnect();
    }

    expect((await api.post(`${url}/export`, undefined, viewer)).status).toBe(403);
    expect((await api.post(`${url}/export`, undefined, stranger)).status).toBe(404);
    const started = await api.post(`${url}/export`, undefined, owner);
    expect(started.status, started.text).toBe(202);
    const done = await waitFor(
      'the export to finish',
      async () => {
        const list = (await api.get(`${url}/export`, viewer)).body as Array<Record<string, any>>;
        return list.find((e) => e.id === started.body.id && e.status !== 'running');
      },
      30_000,
    );
    expect(done).toMatchObject({ status: 'done', url: expect.any(String) });
    const download = new URL(done.url).pathname;
    expect(download).toBe(`${url}/export/${done.id}/download`);
    expect((await api.get(download, stranger)).status).toBe(404);
    expect((await api.get(download, viewer)).status).toBe(403);

    const res = await fetch(server.url + download, { headers: { cookie: `slipway_session=${owner.cookie}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toContain(`${created.body.id}-${done.id}.rdb`);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.length).toBe(done.sizeBytes);
    expect(bytes.subarray(0, 5).toString()).toBe('REDIS'); // the RDB format's magic

    // A fresh server started on the file has every key.
    const work = mkdtempSync(path.join(tmpdir(), 'slipway-rdb-'));
    writeFileSync(path.join(work, 'dump.rdb'), bytes);
    const port = await freePort();
    const fresh = spawn(
      serverPath!,
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', work, '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const restored = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    restored.on('error', () => undefined); // refused until it listens
    try {
      await waitFor(
        'the fresh server',
        async () =>
          restored
            .ping()
            .then(() => true)
            .catch(() => false),
        10_000,
      );
      expect(await restored.dbsize()).toBe(keys.length);
      expect(await restored.get('session:299')).toBe('value of session:299');
    } finally {
      restored.disconnect();
      fresh.kill('SIGKILL');
      rmSync(work, { recursive: true, force: true });
    }
    const audit = JSON.stringify((await api.get('/v1/audit-logs?limit=100', owner)).body);
    expect(audit).toContain('CreateKeyValueExportEvent');
    expect(audit).toContain('DownloadDatabaseBackupEvent');
  }, 90_000);
});
