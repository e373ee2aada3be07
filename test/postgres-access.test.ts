/**
 * Render's Postgres `/export` and `/credentials` through the API, on a real local server: an export restores with
 * pg_restore into a fresh database of the machine's Postgres; extra users log in, read and write, are counted while
 * connected, and are locked out once dropped. Viewers cannot download, other workspaces get 404s.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS_MAX } from '../src/core/datastores/credentials.js';
import { EXPORTS_KEPT } from '../src/core/datastores/exports.js';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { hasPostgresServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

const pgOk = requireOrSkip('postgres/initdb', hasPostgresServer());
/** The machine's own Postgres (trust auth), where the export is restored. */
const MACHINE_PG = { host: '127.0.0.1', port: 5432, user: 'postgres' };

let server: TestServer;
let api: Client;
let owner: TestUser;
let viewer: TestUser;
let stranger: TestUser;
let url: string;
let conninfo: string;
beforeAll(async () => {
  if (!pgOk) return;
  server = await bootServer({ SLIPWAY_DATASTORE_CHECK_MS: '300' });
  api = client(server.url);
  owner = await signUp(api);
  viewer = await addMember(api, owner, 'viewer');
  stranger = await signUp(api);
  const created = await api.post(
    '/v1/postgres',
    { name: 'main', plan: 'free', databaseName: 'app', databaseUser: 'app_user' },
    owner,
  );
  url = `/v1/postgres/${created.body.id}`;
  await untilStatus(api, owner, url, 'available');
  conninfo = (await api.get(`${url}/connection-info`, owner)).body.externalConnectionString;
  await sql(conninfo, async (c) => {
    await c.query('create table notes (id int primary key, body text)');
    await c.query(`insert into notes select g, 'note ' || g from generate_series(1, 500) g`);
  });
}, 120_000);
afterAll(() => server?.close());

async function sql<T>(config: string | pg.ClientConfig, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client(
    typeof config === 'string' ? { connectionString: config, connectionTimeoutMillis: 3000 } : config,
  );
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}
const as = (username: string, password: string) => {
  const u = new URL(conninfo);
  u.username = username;
  u.password = password;
  return u.toString();
};

describe.skipIf(!pgOk)('Postgres credentials', () => {
  it('creates users that read and write, counts their connections, drops them, never the default one', async () => {
    const initial = (await api.get(`${url}/credentials`, viewer)).body;
    expect(initial).toEqual([
      { username: 'app_user', default: true, createdAt: expect.any(String), openConnections: expect.any(Number) },
    ]);

    for (const username of [
      'Reader',
      '1reader',
      'postgres',
      'app_user',
      'pg_x',
      'a;drop role app_user',
      'x'.repeat(64),
      '',
    ])
      expect((await api.post(`${url}/credentials`, { username }, owner)).status, username).toBe(400);
    expect((await api.post(`${url}/credentials`, { username: 'reader' }, viewer)).status).toBe(403);
    expect((await api.post(`${url}/credentials`, { username: 'reader' }, stranger)).status).toBe(404);

    const created = await api.post(`${url}/credentials`, { username: 'reader' }, owner);
    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({ username: 'reader', default: false, password: expect.any(String) });
    expect((await api.post(`${url}/credentials`, { username: 'reader' }, owner)).status).toBe(409);

    // Full read/write on the database; what it creates belongs to the default user, who reads it too.
    const reader = new pg.Client({ connectionString: as('reader', created.body.password) });
    reader.on('error', () => undefined);
    await reader.connect();
    expect((await reader.query('select count(*)::int as n from notes')).rows[0].n).toBe(500);
    await reader.query(`insert into notes values (501, 'by reader')`);
    await reader.query('create table by_reader (x int)');
    expect(await sql(conninfo, async (c) => (await c.query('select body from notes where id = 501')).rows)).toEqual([
      { body: 'by reader' },
    ]);
    await sql(conninfo, (c) => c.query('insert into by_reader values (1)'));

    const listed = (await api.get(`${url}/credentials`, owner)).body as Array<{ username: string }>;
    expect(listed.map((c) => c.username)).toEqual(['app_user', 'reader']);
    expect(listed[1]).toMatchObject({ default: false, openConnections: 1, createdAt: expect.any(String) });
    expect(JSON.stringify(listed)).not.toContain(created.body.password);

    expect((await api.delete(`${url}/credentials/app_user`, owner)).status).toBe(409);
    expect((await api.delete(`${url}/credentials/ghost`, owner)).status).toBe(404);
    expect((await api.delete(`${url}/credentials/Bad-Name`, owner)).status).toBe(400);
    expect((await api.delete(`${url}/credentials/reader`, stranger)).status).toBe(404);
    expect((await api.delete(`${url}/credentials/reader`, owner)).status).toBe(200);
    // Its session was ended, and it logs in no more; its table stayed, the default user's now.
    await expect(reader.query('select 1')).rejects.toThrow();
    await expect(sql(as('reader', created.body.password), (c) => c.query('select 1'))).rejects.toThrow(
      /authentication failed|does not exist|no pg_hba/,
    );
    expect(
      await sql(conninfo, async (c) => (await c.query('select count(*)::int as n from by_reader')).rows[0].n),
    ).toBe(1);
    expect(((await api.get(`${url}/credentials`, owner)).body as unknown[]).length).toBe(1);

    const audit = JSON.stringify((await api.get('/v1/audit-logs?limit=100', owner)).body);
    expect(audit).toContain('CreatePostgresCredentialEvent');
    expect(audit).toContain('DeletePostgresCredentialEvent');
    expect(audit).not.toContain(created.body.password);

    // At most CREDENTIALS_MAX users besides the default one: the next is a 409, and none is made.
    for (let i = 0; i < CREDENTIALS_MAX; i++)
      expect((await api.post(`${url}/credentials`, { username: `many_${i}` }, owner)).status).toBe(202);
    const over = await api.post(`${url}/credentials`, { username: 'one_too_many' }, owner);
    expect(over.status).toBe(409);
    const all = (await api.get(`${url}/credentials`, owner)).body as Array<{ username: string }>;
    expect(all.length).toBe(CREDENTIALS_MAX + 1);
    for (let i = 0; i < CREDENTIALS_MAX; i++)
      expect((await api.delete(`${url}/credentials/many_${i}`, owner)).status).toBe(200);
  });
});

describe.skipIf(!pgOk)('Postgres exports', () => {
  it('dumps the database; the download restores with pg_restore; viewers and other workspaces are refused', async () => {
    expect((await api.post(`${url}/export`, undefined, viewer)).status).toBe(403);
    expect((await api.post(`${url}/export`, undefined, stranger)).status).toBe(404);
    const started = await api.post(`${url}/export`, undefined, owner);
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ id: expect.stringMatching(/^exp-/), status: 'running' });

    const done = await waitFor(
      'the export to finish',
      async () => {
        const list = (await api.get(`${url}/export`, viewer)).body as Array<Record<string, any>>;
        return list.find((e) => e.id === started.body.id && e.status !== 'running');
      },
      60_000,
    );
    expect(done).toMatchObject({ status: 'done', sizeBytes: expect.any(Number), url: expect.any(String) });
    const expiry = Date.parse(done.expiresAt) - Date.parse(done.createdAt);
    expect(Math.round(expiry / 3_600_000)).toBe(7 * 24);
    const download = new URL(done.url).pathname;
    expect(download).toBe(`${url}/export/${done.id}/download`);
    const dir = path.join(server.dataDir, 'exports', url.split('/').pop()!);
    expect(statSync(dir).mode & 0o777).toBe(0o700);

    expect((await api.get(`${url}/export`, stranger)).status).toBe(404);
    expect((await api.get(download, stranger)).status).toBe(404);
    const refused = await api.get(download, viewer);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('viewers cannot download exports');
    expect((await api.get(`${url}/export/exp-unknown/download`, owner)).status).toBe(404);

    const res = await fetch(server.url + download, {
      headers: { cookie: `slipway_session=${owner.cookie}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.length).toBe(done.sizeBytes);
    expect(bytes.subarray(0, 5).toString()).toBe('PGDMP'); // pg_dump's custom format

    const work = mkdtempSync(path.join(tmpdir(), 'slipway-export-'));
    const file = path.join(work, 'app.dump');
    writeFileSync(file, bytes);
    const fresh = `restore_${randomBytes(4).toString('hex')}`;
    await sql(MACHINE_PG, (c) => c.query(`create database ${fresh}`));
    try {
      const restore = spawnSync(
        'pg_restore',
        ['--no-owner', '--no-privileges', '-h', MACHINE_PG.host, '-p', '5432', '-U', 'postgres', '-d', fresh, file],
        { encoding: 'utf8' },
      );
      expect(restore.status, restore.stderr).toBe(0);
      const rowsOf = (config: string | pg.ClientConfig) =>
        sql(config, async (c) => (await c.query('select id, body from notes order by id')).rows);
      const restored = await rowsOf({ ...MACHINE_PG, database: fresh });
      expect(restored.length).toBeGreaterThanOrEqual(500);
      expect(restored).toEqual(await rowsOf(conninfo));
    } finally {
      await sql(MACHINE_PG, (c) => c.query(`drop database if exists ${fresh} with (force)`));
      rmSync(work, { recursive: true, force: true });
    }

    // Past its 7 days it is gone from the list and from download.
    await server.slipway.store.executeSql(
      `update postgres_exports set expires_at = now() - interval '1 minute' where id = $1`,
      [done.id],
    );
    expect(((await api.get(`${url}/export`, owner)).body as unknown[]).length).toBe(0);
    expect((await api.get(download, owner)).status).toBe(404);
    const audit = JSON.stringify((await api.get('/v1/audit-logs?limit=100', owner)).body);
    expect(audit).toContain('CreatePostgresExportEvent');
    expect(audit).toContain('DownloadDatabaseBackupEvent'); // Render's name
  });

  it(`keeps at most ${EXPORTS_KEPT} exports of a datastore: a new one removes the oldest, file and all`, async () => {
    const ids: string[] = [];
    for (let i = 0; i <= EXPORTS_KEPT; i++) {
      const started = await api.post(`${url}/export`, undefined, owner);
      expect(started.status).toBe(202);
      ids.push(started.body.id);
      await waitFor(
        'the export to finish',
        async () => {
          const list = (await api.get(`${url}/export`, owner)).body as Array<Record<string, any>>;
          return list.find((e) => e.id === started.body.id && e.status === 'done');
        },
        60_000,
      );
    }
    const list = (await api.get(`${url}/export`, owner)).body as Array<{ id: string }>;
    expect(list.map((e) => e.id)).toEqual(ids.slice(1).reverse());
    expect((await api.get(`${url}/export/${ids[0]}/download`, owner)).status).toBe(404);
    const dir = path.join(server.dataDir, 'exports', url.split('/').pop()!);
    expect(existsSync(path.join(dir, `${ids[0]}.dump`))).toBe(false);
    expect(existsSync(path.join(dir, `${ids[1]}.dump`))).toBe(true);
  });
});

/** The cluster provisioner (a role and a database per datastore on the machine's Postgres) offers both as well. */
const clusterOk = await sql(MACHINE_PG, (c) => c.query('select 1')).then(
  () => true,
  () => requireOrSkip(`a Postgres at ${MACHINE_PG.host}:${MACHINE_PG.port}`, false),
);
describe.skipIf(!clusterOk)('on the cluster provisioner', () => {
  it('creates, lists and drops users, and exports, on the shared server; the users go with the datastore', async () => {
    const cluster = await bootServer({ SLIPWAY_POSTGRES_ADMIN_URL: `postgres://postgres@127.0.0.1:5432/postgres` });
    try {
      const capi = client(cluster.url);
      const me = await signUp(capi);
      const suffix = randomBytes(3).toString('hex');
      const created = await capi.post('/v1/postgres', { name: `c ${suffix}`, plan: 'free' }, me);
      expect(created.status, created.text).toBe(201);
      const curl = `/v1/postgres/${created.body.id}`;
      await untilStatus(capi, me, curl, 'available');
      const info = (await capi.get(`${curl}/connection-info`, me)).body.externalConnectionString;
      await sql(info, (c) => c.query('create table t as select 1 as x'));

      const username = `extra_${suffix}`;
      const made = await capi.post(`${curl}/credentials`, { username }, me);
      expect(made.status, made.text).toBe(202);
      const u = new URL(info);
      u.username = username;
      u.password = made.body.password;
      await sql(u.toString(), async (c) => {
        await c.query('insert into t values (2)');
        const listed = (await capi.get(`${curl}/credentials`, me)).body as Array<Record<string, unknown>>;
        expect(listed.find((x) => x.username === username)).toMatchObject({ default: false, openConnections: 1 });
      });
      // The plan's connections bound the database whichever role connects: a credential adds none to a shared server.
      const limits = await sql(MACHINE_PG, (c) =>
        c.query(
          `select d.datconnlimit as db, r.rolconnlimit as role from pg_database d, pg_roles r
            where d.datname = $1 and r.rolname = $2`,
          [u.pathname.slice(1), new URL(info).username],
        ),
      );
      expect(limits.rows[0].db).toBeGreaterThan(0);
      expect(limits.rows[0].db).toBe(limits.rows[0].role);

      // Point-in-time recovery is the cluster server's own backups' business: a 501 that says so.
      const recovery = await capi.get(`${curl}/recovery`, me);
      expect(recovery.status).toBe(501);
      expect(recovery.body.message).toMatch(/its backups are that server's/);

      const started = await capi.post(`${curl}/export`, undefined, me);
      expect(started.status, started.text).toBe(202);
      const done = await waitFor(
        'the export',
        async () => {
          const list = (await capi.get(`${curl}/export`, me)).body as Array<Record<string, any>>;
          return list.find((e) => e.status !== 'running');
        },
        60_000,
      );
      expect(done).toMatchObject({ status: 'done' });
      const file = await fetch(cluster.url + new URL(done.url).pathname, {
        headers: { cookie: `slipway_session=${me.cookie}` },
      });
      expect(
        Buffer.from(await file.arrayBuffer())
          .subarray(0, 5)
          .toString(),
      ).toBe('PGDMP');

      expect((await capi.delete(curl, me)).status).toBe(204);
      const left = await sql(MACHINE_PG, (c) => c.query('select 1 from pg_roles where rolname = $1', [username]));
      expect(left.rowCount).toBe(0);
    } finally {
      await cluster.close();
    }
  });
});
