/**
 * Point-in-time recovery (Render's `/v1/postgres/:id/recovery`) on a real local server archiving to pgBackRest: rows
 * written, an instant noted, more rows written; the recovery to that instant is a new datastore with exactly the first
 * rows and a password of its own, and the source is untouched. The window is enforced; the free plan keeps none. A
 * deleted database stays recoverable, with everything it committed, until its window is over.
 */
import { Ajv } from 'ajv';
import ajvFormats from 'ajv-formats';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPgbackrest } from '../src/provisioners/postgres/backups.js';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { hasPostgresServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { sleep, waitFor } from './helpers/process.js';
import { loadRenderReference } from './helpers/render-reference.js';
import { bootServer, type TestServer } from './helpers/server.js';

const ajv = new Ajv({ strict: false, allErrors: true });
(ajvFormats as unknown as typeof ajvFormats.default)(ajv);
ajv.addSchema(loadRenderReference(), 'render');
/** Render's 200 body of `<method> /postgres/{postgresId}/recovery`. */
const renderRecovery = (method: 'get' | 'post') =>
  ajv.getSchema(
    `render#/paths/~1postgres~1%7BpostgresId%7D~1recovery/${method}/responses/200/content/application~1json/schema`,
  )!;

const ok = requireOrSkip('postgres/initdb and pgbackrest', hasPostgresServer() && !!findPgbackrest());
let server: TestServer;
let api: Client;
let owner: TestUser, viewer: TestUser, stranger: TestUser;
beforeAll(async () => {
  if (!ok) return;
  server = await bootServer({
    SLIPWAY_BACKUP_CHECK_MS: '500',
    SLIPWAY_BACKUP_RETRY_MS: '1000',
    SLIPWAY_DATASTORE_CHECK_MS: '300',
  });
  api = client(server.url);
  owner = await signUp(api);
  viewer = await addMember(api, owner, 'viewer');
  stranger = await signUp(api);
}, 60_000);
afterAll(() => server?.close());

async function rows(conninfo: string): Promise<number[]> {
  const c = new pg.Client({ connectionString: conninfo, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    return (await c.query<{ id: number }>('select id from notes order by id')).rows.map((r) => r.id);
  } finally {
    await c.end();
  }
}
async function sql(conninfo: string, text: string) {
  const c = new pg.Client({ connectionString: conninfo, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}

describe.skipIf(!ok)('Postgres point-in-time recovery', () => {
  it('restores a new datastore to the instant asked for, with its own password; the source is untouched', async () => {
    const created = await api.post(
      '/v1/postgres',
      { name: 'orders', plan: 'basic_256mb', databaseName: 'shop' },
      owner,
    );
    expect(created.status, created.text).toBe(201);
    const url = `/v1/postgres/${created.body.id}`;
    await untilStatus(api, owner, url, 'available', 60_000);
    const source = (await api.get(`${url}/connection-info`, owner)).body.externalConnectionString as string;
    await sql(source, 'create table notes (id int primary key)');
    await sql(source, 'insert into notes values (1), (2), (3)');

    // The first base backup is taken as soon as it serves.
    const info = await waitFor(
      'the first base backup',
      async () => {
        const res = await api.get(`${url}/recovery`, viewer);
        expect(res.status, res.text).toBe(200);
        return res.body.recoveryStatus === 'AVAILABLE' ? res.body : undefined;
      },
      60_000,
      500,
    );
    expect(Date.parse(info.startsAt)).toBeLessThanOrEqual(Date.parse(info.endsAt));
    expect(renderRecovery('get')(info), JSON.stringify(renderRecovery('get').errors)).toBe(true);
    await sleep(1100);
    const noted = new Date();
    await sleep(1100);
    await sql(source, 'insert into notes values (4), (5)');

    // Outside the window, and callers who may not.
    for (const restoreTime of ['2001-01-01T00:00:00Z', new Date(Date.now() + 3_600_000).toISOString()]) {
      const res = await api.post(`${url}/recovery`, { restoreTime }, owner);
      expect(res.status, res.text).toBe(400);
      expect(res.body.message).toMatch(/within the recovery window, \S+ to \S+/);
    }
    const badName = await api.post(
      `${url}/recovery`,
      { restoreTime: noted.toISOString(), restoreName: 'a\u0007b' },
      owner,
    );
    expect(badName.status).toBe(400); // the one rule for names
    expect(badName.body.details[0].field).toBe('restoreName');
    expect((await api.post(`${url}/recovery`, { restoreTime: noted.toISOString() }, viewer)).status).toBe(403);
    expect((await api.post(`${url}/recovery`, { restoreTime: noted.toISOString() }, stranger)).status).toBe(404);
    expect((await api.get(`${url}/recovery`, stranger)).status).toBe(404);

    const recovered = await api.post(
      `${url}/recovery`,
      { restoreTime: noted.toISOString(), restoreName: 'orders at noon' },
      owner,
    );
    expect(recovered.status, recovered.text).toBe(200);
    expect(renderRecovery('post')(recovered.body), JSON.stringify(renderRecovery('post').errors)).toBe(true);
    expect(recovered.body).toMatchObject({ name: 'orders at noon', plan: 'basic_256mb', databaseName: 'shop' });
    expect(recovered.body.id).not.toBe(created.body.id);
    // One recovery of a database at a time: a repeated POST while it is made is a 409, not a second restore.
    const again = await api.post(`${url}/recovery`, { restoreTime: noted.toISOString() }, owner);
    expect(again.status, again.text).toBe(409);
    const restoredUrl = `/v1/postgres/${recovered.body.id}`;
    await untilStatus(api, owner, restoredUrl, 'available', 120_000);
    const restored = (await api.get(`${restoredUrl}/connection-info`, owner)).body.externalConnectionString as string;
    expect(new URL(restored).password).not.toBe(new URL(source).password);
    expect(await rows(restored)).toEqual([1, 2, 3]);
    expect(await rows(source)).toEqual([1, 2, 3, 4, 5]);
    // It is a database of its own: writes to it stay there, and it archives to a repository of its own.
    await sql(restored, 'insert into notes values (10)');
    expect(await rows(source)).toEqual([1, 2, 3, 4, 5]);
    await waitFor(
      "the recovered database's own first backup",
      async () => (await api.get(`${restoredUrl}/recovery`, owner)).body.recoveryStatus === 'AVAILABLE',
      60_000,
      500,
    );
    const audit = JSON.stringify((await api.get('/v1/audit-logs?limit=100', owner)).body);
    expect(audit).toContain('RecoverPostgresEvent');

    // Deleted, it stays recoverable for its window: everything it committed (the 10 too) is archived first.
    const repo = `${server.dataDir}/backups/postgres/${recovered.body.id}`;
    expect((await api.delete(restoredUrl, owner)).status).toBe(204);
    const deletedAt = Date.now();
    expect((await api.get(restoredUrl, owner)).status).toBe(404);
    expect(existsSync(repo)).toBe(true);
    const kept = await api.get(`${restoredUrl}/recovery`, viewer);
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.recoveryStatus).toBe('AVAILABLE');
    expect(Math.abs(Date.parse(kept.body.endsAt) - deletedAt)).toBeLessThan(10_000); // its window ends at deletion
    expect((await api.get(`${restoredUrl}/recovery`, stranger)).status).toBe(404);
    expect((await api.post(`${restoredUrl}/recovery`, { restoreTime: kept.body.endsAt }, stranger)).status).toBe(404);
    const back = await api.post(
      `${restoredUrl}/recovery`,
      { restoreTime: kept.body.endsAt, restoreName: 'back' },
      owner,
    );
    expect(back.status, back.text).toBe(200);
    await untilStatus(api, owner, `/v1/postgres/${back.body.id}`, 'available', 120_000);
    const backInfo = (await api.get(`/v1/postgres/${back.body.id}/connection-info`, owner)).body;
    expect(await rows(backInfo.externalConnectionString as string)).toEqual([1, 2, 3, 10]);

    // Its window over (moved into the past here), the backup loop removes its repository, then its record.
    await server.slipway.store.executeSql(
      `update deleted_datastores set backups_until = now() - interval '1 second' where id = $1`,
      [recovered.body.id],
    );
    await waitFor('its backups gone', async () => !existsSync(repo), 30_000);
    await waitFor('its record gone', async () => (await api.get(`${restoredUrl}/recovery`, owner)).status === 404);
  }, 300_000);

  it("says when its archiver fails: an event (Render's postgres_wal_archive_failed) and a degraded /status", async () => {
    const created = await api.post('/v1/postgres', { name: 'ledger', plan: 'basic_256mb' }, owner);
    const url = `/v1/postgres/${created.body.id}`;
    await untilStatus(api, owner, url, 'available', 60_000);
    const types = async () =>
      ((await api.get(`${url}/events?limit=100`, owner)).body as Array<{ event: { type: string } }>).map(
        (e) => e.event.type,
      );
    await waitFor('its first base backup', async () => (await types()).includes('datastore_backup_completed'), 60_000);
    expect((await api.get('/status')).body).toMatchObject({ status: 'operational', backups: { failing: 0 } });
    expect((await api.get('/status')).body.backups.archiving).toBeGreaterThanOrEqual(1);

    // Its repository's archive stops taking segments (a full or broken backup disk); a segment's worth of writes.
    const archive = `${server.dataDir}/backups/postgres/${created.body.id}/repo/archive`;
    execFileSync('chmod', ['-R', 'a-w', archive]);
    try {
      const conninfo = (await api.get(`${url}/connection-info`, owner)).body.externalConnectionString as string;
      await sql(conninfo, "create table filler as select repeat('x', 1000) as x from generate_series(1, 40000)");
      await waitFor(
        'the failure seen',
        async () => (await types()).includes('datastore_wal_archive_failed'),
        30_000,
        250,
      );
      expect((await api.get('/status')).body).toMatchObject({ status: 'degraded', backups: { failing: 1 } });
    } finally {
      execFileSync('chmod', ['-R', 'u+w', archive]);
    }
  }, 180_000);

  it('takes a base backup killed part-way (kill -9) again, and recovery still works', async () => {
    const created = await api.post('/v1/postgres', { name: 'journal', plan: 'basic_256mb' }, owner);
    const id = created.body.id as string;
    const url = `/v1/postgres/${id}`;
    // Its first base backup starts as soon as it serves: every process of it is killed mid-way.
    const under = `--stanza=${id} backup --type=full`;
    const killed = await waitFor(
      'its first base backup under way',
      async () => {
        const pids = execFileSync('pgrep', ['-f', '--', under], { encoding: 'utf8' }).split('\n').filter(Boolean);
        for (const pid of pids) execFileSync('kill', ['-KILL', pid]);
        return pids.length ? pids : undefined;
      },
      60_000,
      10,
    ).catch(() => []);
    expect(killed.length).toBeGreaterThan(0);
    const types = async () =>
      ((await api.get(`${url}/events?limit=100`, owner)).body as Array<{ event: { type: string } }>).map(
        (e) => e.event.type,
      );
    await waitFor('the failure recorded', async () => (await types()).includes('datastore_backup_failed'), 30_000);
    // Tried again (SLIPWAY_BACKUP_RETRY_MS): pgBackRest takes a whole backup over what the killed one left.
    await waitFor('the next backup', async () => (await types()).includes('datastore_backup_completed'), 90_000);
    await untilStatus(api, owner, url, 'available', 30_000);
    const conninfo = (await api.get(`${url}/connection-info`, owner)).body.externalConnectionString as string;
    await sql(conninfo, 'create table notes (id int primary key); insert into notes values (7), (8)');
    await sleep(1100);
    const recovered = await api.post(`${url}/recovery`, { restoreTime: new Date().toISOString() }, owner);
    expect(recovered.status, recovered.text).toBe(200);
    await untilStatus(api, owner, `/v1/postgres/${recovered.body.id}`, 'available', 120_000);
    const restored = (await api.get(`/v1/postgres/${recovered.body.id}/connection-info`, owner)).body;
    expect(await rows(restored.externalConnectionString as string)).toEqual([7, 8]);
  }, 300_000);

  it('keeps no backups on the free plan (NOT_AVAILABLE, and a recovery is a 409)', async () => {
    const created = await api.post('/v1/postgres', { name: 'hobby', plan: 'free' }, owner);
    const url = `/v1/postgres/${created.body.id}`;
    await untilStatus(api, owner, url, 'available', 60_000);
    expect((await api.get(`${url}/recovery`, owner)).body).toEqual({ recoveryStatus: 'NOT_AVAILABLE' });
    const res = await api.post(`${url}/recovery`, { restoreTime: new Date().toISOString() }, owner);
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/paid plan/);
    // Nothing to keep: deleted, it is gone for good.
    expect((await api.delete(url, owner)).status).toBe(204);
    expect((await api.get(`${url}/recovery`, owner)).status).toBe(404);
  }, 120_000);
});
