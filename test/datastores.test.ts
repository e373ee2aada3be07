/**
 * Postgres and key-value datastores through the API, on real servers: local ones started by
 * Slipway, surviving a Slipway restart and a crash; connection info that really connects.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signUp, type Caller, type Client, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { bootServer, killDatastores, type TestServer } from './helpers/server.js';
import { hasPostgresServer, hasRedisServer, requireOrSkip, untilStatus } from './helpers/datastores.js';

const pgOk = requireOrSkip('postgres/initdb', hasPostgresServer());
const redisOk = requireOrSkip('redis-server', hasRedisServer());

/** The pid Slipway keeps for a local datastore's server. */
async function serverPid(id: string): Promise<number> {
  const { rows } = await server.slipway.store.executeSql(
    `select provisioner_state->>'pid' as pid from datastores where id = $1`,
    [id],
  );
  return Number(rows[0].pid);
}
/** As root, each server has a namespace of its own (internal host: its id, at the standard port); else 127.0.0.1. */
const namespaced = async () => (await api.get('/status')).body.isolation.network === 'namespaces';
const eventTypes = async (api: Client, as: Caller, url: string) =>
  ((await api.get(`${url}/events?limit=100`, as)).body as Array<{ event: { type: string } }>).map((e) => e.event.type);

let server: TestServer;
let api: Client;
let owner: TestUser;
beforeAll(async () => {
  server = await bootServer({ SLIPWAY_DATASTORE_CHECK_MS: '300' });
  api = client(server.url);
  owner = await signUp(api);
});
afterAll(() => server?.close());

/** Restarts the server on the same data dir and store; datastore servers keep running meanwhile (unless `whileDown` stops them). */
async function restartServer(whileDown: () => Promise<void> | void = () => undefined) {
  const first = server;
  const { dataDir, databaseUrl } = first;
  await first.stop();
  await whileDown();
  const next = await bootServer({ SLIPWAY_DATASTORE_CHECK_MS: '300' }, { dataDir, databaseUrl });
  // The new server's close() must clean the same dirs the first one made.
  next.close = async () => {
    await killDatastores(next.slipway).catch(() => undefined);
    await next.stop();
    await first.close();
  };
  server = next;
  api = client(server.url);
}

describe.skipIf(!pgOk)('Postgres (local servers)', () => {
  it('creates a real server, keeps its data across a Slipway restart and a crash, suspends, resumes and deletes', async () => {
    const created = await api.post(
      '/v1/postgres',
      { name: 'main db', plan: 'free', databaseName: 'app', databaseUser: 'app_user' },
      owner,
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      status: 'creating',
      databaseName: 'app',
      databaseUser: 'app_user',
      owner: { id: owner.workspaceId },
      suspended: 'not_suspended',
    });
    const url = `/v1/postgres/${created.body.id}`;
    // Render's postgresDetail always has `project`: null for a database in no environment.
    expect((await untilStatus(api, owner, url, 'available')).project).toBeNull();

    const infoNow = async () => (await api.get(`${url}/connection-info`, owner)).body;
    const info = await infoNow();
    const host = (await namespaced()) ? `${created.body.id}:5432` : '127\\.0\\.0\\.1:\\d+';
    expect(info.internalConnectionString).toMatch(new RegExp(`^postgresql://app_user:.+@${host}/app$`));
    expect(info.psqlCommand).toContain('psql');
    const db = new pg.Client({ connectionString: info.externalConnectionString });
    await db.connect();
    await db.query('create table notes (id serial primary key, body text)');
    await db.query(`insert into notes (body) values ('kept')`);
    await db.end();
    // Only its own user, with its password, gets in.
    const wrong = new URL(info.externalConnectionString);
    wrong.password = 'wrong';
    await expect(new pg.Client({ connectionString: wrong.toString() }).connect()).rejects.toThrow(
      /password authentication failed/,
    );
    const other = new URL(info.externalConnectionString);
    other.pathname = '/postgres';
    await expect(new pg.Client({ connectionString: other.toString() }).connect()).rejects.toThrow(
      /no pg_hba.conf entry|not permitted|does not exist/,
    );

    // Where it is now: a server started again in a namespace of its own gets a new address.
    // (A timeout: the address of a server that is gone may be routed nowhere.)
    const read = async (at?: { externalConnectionString: string }) => {
      const c = new pg.Client({
        connectionString: (at ?? (await infoNow())).externalConnectionString,
        connectionTimeoutMillis: 3000,
      });
      await c.connect();
      try {
        return (await c.query('select body from notes')).rows.map((r) => r.body);
      } finally {
        await c.end();
      }
    };

    // Slipway restarts: the server is re-adopted. And when it died while Slipway was down, it is started from its data.
    await restartServer();
    expect((await api.get(url, owner)).body.status).toBe('available');
    expect(await infoNow(), 're-adopted where it was').toEqual(info);
    expect(await read()).toEqual(['kept']);
    const pid = await serverPid(created.body.id);
    await restartServer(() => void process.kill(pid, 'SIGKILL'));
    expect((await api.get(url, owner)).body.status).toBe('available');
    expect(await read()).toEqual(['kept']);
    expect(await serverPid(created.body.id)).not.toBe(pid);

    // Restart and a plan change (applied with a restart), data intact.
    expect((await api.post(`${url}/restart`, undefined, owner)).status).toBe(202);
    await waitFor('the restart', async () => (await eventTypes(api, owner, url)).includes('datastore_restarted'));
    const patched = await api.patch(url, { plan: 'basic_1gb', name: 'main db (bigger)' }, owner);
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ plan: 'basic_1gb', name: 'main db (bigger)' });
    await waitFor('the new plan', async () => (await eventTypes(api, owner, url)).includes('datastore_updated'));
    const c = new pg.Client({ connectionString: (await infoNow()).externalConnectionString });
    await c.connect();
    expect((await c.query('show shared_buffers')).rows[0].shared_buffers).toBe('256MB');
    await c.end();
    expect(await read()).toEqual(['kept']);

    // A crash of the server: unavailable, then restarted from its data.
    process.kill(await serverPid(created.body.id), 'SIGKILL');
    await waitFor(
      'the crash to be noticed and repaired',
      async () => {
        const types = await eventTypes(api, owner, url);
        return types.includes('datastore_unavailable') && types[0] === 'datastore_available';
      },
      20_000,
    );
    expect(await read()).toEqual(['kept']);

    expect((await api.post(`${url}/suspend`, undefined, owner)).status).toBe(202);
    const suspended = await untilStatus(api, owner, url, 'suspended');
    expect(suspended.suspended).toBe('suspended');
    await expect(read()).rejects.toThrow();
    expect((await api.post(`${url}/resume`, undefined, owner)).status).toBe(202);
    await untilStatus(api, owner, url, 'available');
    expect(await read()).toEqual(['kept']);
    const last = await infoNow();

    expect((await api.delete(url, owner)).status).toBe(204);
    expect((await api.get(url, owner)).status).toBe(404);
    expect((await api.delete(url, owner)).status).toBe(404);
    expect(existsSync(path.join(server.dataDir, 'datastores', created.body.id))).toBe(false);
    await expect(read(last)).rejects.toThrow();
  }, 90_000);

  it("refuses bad plans, versions, names and other workspaces' ids with 4xx", async () => {
    const bad = async (body: unknown, status = 400) => {
      const res = await api.post('/v1/postgres', body, owner);
      expect(res.status, res.text).toBe(status);
      expect(res.body.code).toBe(status === 404 ? 'not_found' : 'validation_failed');
      return res.body;
    };
    await bad({ name: 'x', plan: 'gigantic' });
    await bad({ name: 'x', plan: 'free', version: '9' });
    expect((await bad({ name: 'x', plan: 'free', version: '11' })).details[0].message).toMatch(/available/);
    await bad({ name: 'x', plan: 'free', databaseName: 'Robert"); drop' });
    await bad({ name: 'x', plan: 'free', databaseUser: 'postgres' });
    await bad({ name: '', plan: 'free' });
    await bad({ name: 'x', plan: 'free', environmentId: 'evm-doesnotexist000000' }, 404);
    const malformed = await api.call('POST', '/v1/postgres', {
      ...owner,
      raw: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);

    // In an environment: listed by it and listed in it.
    const project = (await api.post('/v1/projects', { name: 'p', environments: [{ name: 'production' }] }, owner)).body;
    const environmentId = project.environmentIds[0];
    const created = (await api.post('/v1/postgres', { name: 'mine', plan: 'free', environmentId }, owner)).body;
    expect(created.environmentId).toBe(environmentId);
    expect(
      (await api.get(`/v1/postgres?environmentId=${environmentId}`, owner)).body.map(
        (e: { postgres: { id: string } }) => e.postgres.id,
      ),
    ).toEqual([created.id]);
    expect((await api.get(`/v1/environments/${environmentId}`, owner)).body.databasesIds).toEqual([created.id]);
    const stranger = await signUp(api);
    expect((await api.post('/v1/postgres', { name: 'x', plan: 'free', environmentId }, stranger)).status).toBe(404);
    for (const route of ['', '/connection-info', '/events'])
      expect((await api.get(`/v1/postgres/${created.id}${route}`, stranger)).status).toBe(404);
    expect((await api.delete(`/v1/postgres/${created.id}`, stranger)).status).toBe(404);
    expect((await api.get('/v1/postgres', stranger)).body).toEqual([]);
    const list = (await api.get('/v1/postgres?limit=100', owner)).body;
    expect(list.map((e: { postgres: { id: string } }) => e.postgres.id)).toContain(created.id);
    expect((await api.get('/v1/key-value/' + created.id, owner)).status).toBe(404);
    await untilStatus(api, owner, `/v1/postgres/${created.id}`, 'available');
    expect((await api.delete(`/v1/postgres/${created.id}`, owner)).status).toBe(204);
  }, 60_000);
});

describe('without a provisioner', () => {
  it('answers 501 not_configured, saying how to enable datastores', async () => {
    const off = await bootServer({ SLIPWAY_LOCAL_DATASTORES: '0' });
    try {
      const offApi = client(off.url);
      const user = await signUp(offApi);
      for (const [url, body] of [
        ['/v1/postgres', { name: 'x', plan: 'free' }],
        ['/v1/key-value', { name: 'x', plan: 'free' }],
      ] as const) {
        const res = await offApi.post(url, body, user);
        expect(res.status).toBe(501);
        expect(res.body.code).toBe('not_configured');
        expect(res.body.message).toMatch(/SLIPWAY_(POSTGRES|REDIS)_ADMIN_URL/);
      }
      expect((await offApi.get('/v1/postgres', user)).body).toEqual([]);
    } finally {
      await off.close();
    }
  });
});

describe.skipIf(!redisOk)('key-value (local servers)', () => {
  it("creates a password-protected server with the plan's memory and policy, persists across a restart, applies a new policy live", async () => {
    const created = await api.post(
      '/v1/key-value',
      { name: 'cache', plan: 'starter', maxmemoryPolicy: 'allkeys_lfu' },
      owner,
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      status: 'creating',
      options: { maxmemoryPolicy: 'allkeys_lfu' },
      plan: 'starter',
    });
    const url = `/v1/key-value/${created.body.id}`;
    await untilStatus(api, owner, url, 'available');
    const info = (await api.get(`${url}/connection-info`, owner)).body;
    const host = (await namespaced()) ? `${created.body.id}:6379` : '127\\.0\\.0\\.1:\\d+';
    expect(info.internalConnectionString).toMatch(new RegExp(`^redis://red-[0-9a-v]{20}:.+@${host}$`));
    expect(info.cliCommand).toContain('redis-cli');

    const kv = new Redis(info.externalConnectionString, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await kv.connect();
    await kv.set('greeting', 'hello');
    const memory = await kv.info('memory');
    expect(memory).toMatch(/maxmemory:268435456/);
    expect(memory).toMatch(/maxmemory_policy:allkeys-lfu/);
    kv.disconnect();
    // Without the password: nothing; with a wrong one: refused.
    const { hostname, port, username } = new URL(info.externalConnectionString);
    const intruder = new Redis({
      host: hostname,
      port: Number(port),
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableReadyCheck: false,
      retryStrategy: () => null,
    });
    await intruder.connect();
    await expect(intruder.get('greeting')).rejects.toThrow(/NOAUTH/);
    await expect(intruder.auth(username, 'nope')).rejects.toThrow(/WRONGPASS/);
    intruder.disconnect();

    await restartServer();
    const again = new Redis(info.externalConnectionString, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await again.connect();
    expect(await again.get('greeting')).toBe('hello');

    const patched = await api.patch(url, { maxmemoryPolicy: 'volatile_ttl' }, owner);
    expect(patched.status).toBe(200);
    expect(patched.body.options.maxmemoryPolicy).toBe('volatile_ttl');
    await waitFor('the new policy', async () => (await again.info('memory')).includes('maxmemory_policy:volatile-ttl'));
    expect(await again.get('greeting')).toBe('hello');
    again.disconnect();

    expect((await api.post(url + '/suspend', undefined, owner)).status).toBe(202);
    await untilStatus(api, owner, url, 'suspended');
    expect((await api.post(url + '/resume', undefined, owner)).status).toBe(202);
    await untilStatus(api, owner, url, 'available');
    expect((await api.post('/v1/key-value', { name: 'x', plan: 'huge' }, owner)).status).toBe(400);
    expect((await api.post('/v1/key-value', { name: 'x', plan: 'free', maxmemoryPolicy: 'lru' }, owner)).status).toBe(
      400,
    );
    expect((await api.delete(url, owner)).status).toBe(204);
    expect((await api.delete(url, owner)).status).toBe(404);
  }, 90_000);
});
