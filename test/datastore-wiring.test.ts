/**
 * Datastores wired into apps (`fromDatabase`, `fromKeyValue`, env groups), and the `cluster` and
 * `shared` provisioners on the machine's own Postgres and Redis, through the API.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { finished, packFixture, upload, viaRouter } from './helpers/apps.js';
import { signUp, type Client, type TestUser } from './helpers/client.js';
import { hasPostgresServer, hasRedisServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { useServer } from './helpers/server.js';

const ADMIN_PG = process.env.TEST_POSTGRES_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ADMIN_REDIS = process.env.TEST_REDIS_ADMIN_URL ?? 'redis://127.0.0.1:6379';
const localOk = requireOrSkip('postgres and redis-server', hasPostgresServer() && hasRedisServer());

describe.skipIf(!localOk)('datastores wired into a deployed app', () => {
  const t = useServer({ SLIPWAY_DATASTORE_CHECK_MS: '300' });

  it('gives the app DATABASE_URL (fromDatabase) and REDIS_URL (fromKeyValue, via an env group) that really connect', async () => {
    const { api, server } = t;
    const owner = await signUp(api);
    const pgId = (await api.post('/v1/postgres', { name: 'app db', plan: 'free' }, owner)).body.id;
    const kvId = (await api.post('/v1/key-value', { name: 'app cache', plan: 'free' }, owner)).body.id;
    await untilStatus(api, owner, `/v1/postgres/${pgId}`, 'available');
    await untilStatus(api, owner, `/v1/key-value/${kvId}`, 'available');
    const pgInfo = (await api.get(`/v1/postgres/${pgId}/connection-info`, owner)).body;
    const db = new pg.Client({ connectionString: pgInfo.externalConnectionString });
    await db.connect();
    await db.query(
      `create table notes (id serial primary key, body text); insert into notes (body) values ('from postgres')`,
    );
    await db.end();
    const kv = new Redis(
      (await api.get(`/v1/key-value/${kvId}/connection-info`, owner)).body.externalConnectionString,
      { maxRetriesPerRequest: 0 },
    );
    await kv.set('greeting', 'from redis');
    kv.disconnect();

    // References are checked: right kind, same workspace, a property the kind has.
    const stranger = await signUp(api);
    const refused = [
      { key: 'A', fromDatabase: { id: kvId, property: 'connectionString' } },
      { key: 'A', fromKeyValue: { id: kvId, property: 'database' } },
      { key: 'A', fromDatabase: { id: 'dpg-00000000000000000000', property: 'host' } },
      { key: 'A', fromDatabase: { id: pgId, property: 'nonsense' } },
    ];
    const svcBody = (envVars: unknown[]) => ({
      type: 'web_service',
      name: `db-web-${Math.random().toString(36).slice(2, 8)}`,
      serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
      envVars,
    });
    for (const ref of refused)
      expect((await api.post('/v1/services', svcBody([ref]), owner)).status, JSON.stringify(ref)).toBe(400);
    expect(
      (await api.post('/v1/services', svcBody([{ key: 'A', fromDatabase: { id: pgId, property: 'host' } }]), stranger))
        .status,
    ).toBe(400);

    const created = await api.post(
      '/v1/services',
      svcBody([{ key: 'DATABASE_URL', fromDatabase: { id: pgId, property: 'connectionString' } }]),
      owner,
    );
    expect(created.status, created.text).toBe(201);
    const service = created.body.service;
    const group = await api.post(
      '/v1/env-groups',
      {
        name: 'cache',
        serviceIds: [service.id],
        envVars: [{ key: 'REDIS_URL', fromKeyValue: { id: kvId, property: 'connectionString' } }],
      },
      owner,
    );
    expect(group.status, group.text).toBe(201);
    expect(group.body.envVars[0]).toMatchObject({
      key: 'REDIS_URL',
      fromKeyValue: { id: kvId, property: 'connectionString' },
    });
    expect(group.body.envVars[0].value).toMatch(/^redis:\/\//);

    const up = await upload(api, owner, service.id, await packFixture('db-web'));
    const deploy = await finished(api, owner, service.id, up.body.deployId);
    expect(deploy.status, JSON.stringify(deploy)).toBe('live');
    const router = (p: string) => viaRouter(server.slipway.routerPort, service.slug, p);
    expect((await router('/db')).text).toBe('from postgres');
    expect((await router('/kv')).text).toBe('from redis');

    const vars = (await api.get(`/v1/services/${service.id}/env-vars`, owner)).body;
    expect(vars[0].envVar).toMatchObject({
      key: 'DATABASE_URL',
      value: pgInfo.internalConnectionString,
      fromDatabase: { id: pgId, property: 'connectionString' },
    });
    const resolved = (await api.get(`/v1/services/${service.id}/env-vars?resolved=true`, owner)).body;
    expect(resolved.find((v: { envVar: { key: string } }) => v.envVar.key === 'REDIS_URL').source).toBe(
      `envGroup:${group.body.id}`,
    );

    // A referenced datastore cannot be deleted out from under the app.
    const blocked = await api.delete(`/v1/postgres/${pgId}`, owner);
    expect(blocked.status).toBe(409);
    expect(blocked.body.message).toContain(service.id);
    expect((await api.get(`/v1/postgres/${pgId}`, owner)).body.status).toBe('available');
  }, 120_000);
});

/** Whether the machine's Postgres and Redis answer (the cluster/shared provisioners need them). */
async function sharedServersUp(): Promise<boolean> {
  const c = new pg.Client({ connectionString: ADMIN_PG, connectionTimeoutMillis: 2000 });
  const r = new Redis(ADMIN_REDIS, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await c.connect();
    await r.connect();
    await r.ping();
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
    r.disconnect();
  }
}
const sharedOk = requireOrSkip(`Postgres at ${ADMIN_PG} and Redis at ${ADMIN_REDIS}`, await sharedServersUp());

describe.skipIf(!sharedOk)('cluster Postgres and shared key-value provisioners', () => {
  const t = useServer({
    SLIPWAY_DATASTORE_CHECK_MS: '300',
    SLIPWAY_POSTGRES_ADMIN_URL: ADMIN_PG,
    SLIPWAY_REDIS_ADMIN_URL: ADMIN_REDIS,
  });
  let api: Client;
  let owner: TestUser;
  beforeAll(async () => {
    api = t.api;
    owner = await signUp(api);
  });

  it('isolates two Postgres datastores on one server: each user reaches only its own database', async () => {
    const ids = [
      (await api.post('/v1/postgres', { name: 'a', plan: 'free' }, owner)).body.id,
      (await api.post('/v1/postgres', { name: 'b', plan: 'free' }, owner)).body.id,
    ];
    const infos = [];
    for (const id of ids) {
      const body = await untilStatus(api, owner, `/v1/postgres/${id}`, 'available', 5000);
      infos.push({
        ...(await api.get(`/v1/postgres/${id}/connection-info`, owner)).body,
        databaseName: body.databaseName,
      });
    }
    const [a, b] = infos;
    const asA = new pg.Client({ connectionString: a.externalConnectionString });
    await asA.connect();
    await asA.query('create table t (x int); insert into t values (1)');
    await asA.end();
    const intoB = new URL(a.externalConnectionString);
    intoB.pathname = `/${b.databaseName}`;
    await expect(new pg.Client({ connectionString: intoB.toString() }).connect()).rejects.toThrow(/permission denied/);

    expect((await api.post(`/v1/postgres/${ids[0]}/suspend`, undefined, owner)).status).toBe(202);
    await untilStatus(api, owner, `/v1/postgres/${ids[0]}`, 'suspended');
    await expect(new pg.Client({ connectionString: a.externalConnectionString }).connect()).rejects.toThrow();
    for (const id of ids) expect((await api.delete(`/v1/postgres/${id}`, owner)).status).toBe(204);
    const admin = new pg.Client({ connectionString: ADMIN_PG });
    await admin.connect();
    const left = await admin.query('select datname from pg_database where datname = any($1)', [
      infos.map((i) => i.databaseName),
    ]);
    await admin.end();
    expect(left.rows).toEqual([]);
  }, 60_000);

  it('isolates two key-value datastores on one Redis by ACL user and key prefix', async () => {
    const ids = [
      (await api.post('/v1/key-value', { name: 'a', plan: 'free' }, owner)).body.id,
      (await api.post('/v1/key-value', { name: 'b', plan: 'free' }, owner)).body.id,
    ];
    const infos = [];
    for (const id of ids) {
      await untilStatus(api, owner, `/v1/key-value/${id}`, 'available', 5000);
      infos.push((await api.get(`/v1/key-value/${id}/connection-info`, owner)).body);
    }
    const [a, b] = infos;
    expect(a.keyPrefix).toBe(`${ids[0]}:`);
    const asA = new Redis(a.externalConnectionString, { maxRetriesPerRequest: 0 });
    await asA.set(`${a.keyPrefix}k`, 'a');
    await expect(asA.get(`${b.keyPrefix}k`)).rejects.toThrow(/NOPERM/);
    await expect(asA.flushall()).rejects.toThrow(/NOPERM/);
    asA.disconnect();
    for (const id of ids) expect((await api.delete(`/v1/key-value/${id}`, owner)).status).toBe(204);
    const admin = new Redis(ADMIN_REDIS);
    expect(await admin.exists(`${a.keyPrefix}k`)).toBe(0);
    admin.disconnect();
  }, 60_000);
});
