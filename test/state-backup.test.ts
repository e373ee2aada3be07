/**
 * Slipway's own backup (`npm run backup` / `npm run restore`, app/state-backup.ts): a data dir with two workspaces,
 * live services, env vars and a datastore is backed up, restored into a new data dir (and, on Postgres, a new
 * database), and a second Slipway on other ports answers every read as the first did, to the same sessions, and
 * serves the apps again with their env vars. A running Slipway takes its own backups on a schedule.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { REPO_ROOT, waitFor } from './helpers/process.js';
import { bootServer, TEST_DATABASE_URL, type TestServer } from './helpers/server.js';

const run = promisify(execFile);
const cleanups: Array<() => Promise<unknown> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** `npm run backup|restore -- <file>` as the operator runs it (the CLI from source), with only these settings. */
async function stateCli(command: 'backup' | 'restore', file: string, env: Record<string, string>) {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('SLIPWAY_') && k !== 'DATABASE_URL'),
  );
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/state-cli.ts', command, file], {
      cwd: REPO_ROOT,
      env: { ...base, ...env },
      timeout: 120_000,
    });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, out: e.stderr };
  }
}

/** An empty database on the suite's Postgres, for a restore (the tests' template has the schema already). */
async function emptyDatabase(): Promise<string | undefined> {
  if (!TEST_DATABASE_URL) return undefined;
  const name = `slipway_restore_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create database ${name} template template0`);
  await admin.end();
  cleanups.push(async () => {
    const again = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await again.connect();
    await again.query(`drop database if exists ${name} with (force)`);
    await again.end();
  });
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.href;
}

/** What the API answers a user, with each server's own ports and URL taken out. */
async function reads(api: Client, server: TestServer, as: TestUser) {
  const get = async (url: string) => {
    const res = await api.get(url, as);
    expect(res.status, `${url}: ${res.text}`).toBe(200);
    return res.body;
  };
  const services = (await get('/v1/services?limit=100')) as Array<{ service: { id: string } }>;
  const body: Record<string, unknown> = {
    owners: await get('/v1/owners'),
    services,
    envGroups: await get('/v1/env-groups'),
    keyValue: ((await get('/v1/key-value')) as Array<{ keyValue: Record<string, unknown> }>).map(({ keyValue }) => [
      keyValue.id,
      keyValue.name,
      keyValue.plan,
    ]),
    auditLogs: await get('/v1/audit-logs?limit=100'),
  };
  for (const { service } of services) {
    body[`${service.id}/env-vars`] = await get(`/v1/services/${service.id}/env-vars`);
    body[`${service.id}/deploys`] = await get(`/v1/services/${service.id}/deploys?limit=100`);
  }
  return JSON.stringify(body).replaceAll(server.url, 'API').replaceAll(`:${server.slipway.routerPort}`, ':ROUTER');
}

describe("Slipway's own backup", () => {
  it('restores every workspace, service, deploy record, secret and session into a new data dir, and the apps serve again', async () => {
    const first = await bootServer();
    cleanups.push(() => first.close());
    const api = client(first.url);
    const [alice, bob] = await Promise.all([signUp(api), signUp(api)]);
    const apps = [];
    for (const [user, greeting] of [
      [alice, 'hello from alice'],
      [bob, 'hello from bob'],
    ] as const) {
      const { service } = await deployFixture(api, user, 'plain-web', {
        envVars: [{ key: 'GREETING', value: greeting }],
      });
      apps.push({ service, greeting });
    }
    const kv = await api.post('/v1/key-value', { name: 'cache', plan: 'free' }, alice);
    expect(kv.status, kv.text).toBe(201);
    await api.post('/v1/env-groups', { name: 'shared', envVars: [{ key: 'TOKEN', value: 's3cret-value' }] }, bob);
    for (const { service, greeting } of apps)
      expect((await viaRouter(first.slipway.routerPort, service.slug)).json().greeting).toBe(greeting);
    const before = [await reads(api, first, alice), await reads(api, first, bob)];

    const work = mkdtempSync(path.join(tmpdir(), 'slipway-state-'));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const file = path.join(work, 'slipway.tar');
    const settings = {
      SLIPWAY_DATA_DIR: first.dataDir,
      ...(first.databaseUrl ? { DATABASE_URL: first.databaseUrl } : {}),
    };
    if (!first.databaseUrl) {
      // The embedded store opens in one process: the running Slipway's data dir is refused, with what to do instead.
      const refused = await stateCli('backup', file, settings);
      expect(refused.code).toBe(1);
      expect(refused.out).toMatch(/in use by another Slipway process.*SLIPWAY_STATE_BACKUP_DIR/);
      expect(existsSync(file)).toBe(false);
      await first.stop();
    }
    const backedUp = await stateCli('backup', file, settings);
    expect(backedUp.code, backedUp.out).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600); // it holds the secret key

    // Only into an empty data dir.
    const occupied = mkdtempSync(path.join(tmpdir(), 'slipway-occupied-'));
    cleanups.push(() => rmSync(occupied, { recursive: true, force: true }));
    writeFileSync(path.join(occupied, 'something'), 'x');
    const refused = await stateCli('restore', file, { SLIPWAY_DATA_DIR: occupied });
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/is not empty/);

    const dataDir = path.join(work, 'restored');
    const databaseUrl = await emptyDatabase();
    const restored = await stateCli('restore', file, {
      SLIPWAY_DATA_DIR: dataDir,
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    });
    expect(restored.code, restored.out).toBe(0);
    await first.close(); // its apps go: the restored Slipway starts its own

    const second = await bootServer({}, { dataDir, ...(databaseUrl ? { databaseUrl } : {}) });
    cleanups.push(() => second.close());
    const api2 = client(second.url);
    // The same sessions, the same answers; the secrets open with the restored key.
    expect([await reads(api2, second, alice), await reads(api2, second, bob)]).toEqual(before);
    for (const { service, greeting } of apps)
      await waitFor(
        `${service.slug} serving again`,
        async () => {
          const reply = await viaRouter(second.slipway.routerPort, service.slug).catch(() => undefined);
          return reply?.status === 200 && reply.json().greeting === greeting;
        },
        60_000,
        250,
      );
  }, 300_000);

  it('a running Slipway backs itself up on a schedule, keeping the newest few', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-scheduled-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const server = await bootServer({
      SLIPWAY_STATE_BACKUP_DIR: dir,
      SLIPWAY_STATE_BACKUP_SECONDS: '0.5',
      SLIPWAY_STATE_BACKUP_KEEP: '2',
    });
    cleanups.push(() => server.close());
    await signUp(client(server.url));
    const taken = new Set<string>();
    await waitFor(
      'four scheduled backups',
      async () => {
        const names = readdirSync(dir).filter((name) => name.endsWith('.tar'));
        expect(names.length).toBeLessThanOrEqual(3); // the keep (2), and one being written
        for (const name of names) taken.add(name);
        return taken.size >= 4;
      },
      60_000,
      100,
    );
    expect([...taken].every((name) => /^slipway-\d{8}T\d{9}Z\.tar$/.test(name))).toBe(true);
  }, 120_000);
});
