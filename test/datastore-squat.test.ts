/**
 * Issue 10, finding 2: another tenant binds a datastore's TCP port while its server is down (kill -9). Slipway must not
 * hand it a secret (its own checks and administration go over a private unix socket), must say the datastore is
 * unavailable because its port is taken, and must serve it again on another port, with no Slipway restart.
 *
 * The squatter is a listener in the test process (test/helpers/squatter.ts) rather than a deployed app of another
 * workspace: it behaves the same on the wire, and keeps working where apps get their own network namespace (in which
 * an app can no longer bind the host's ports at all).
 */
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { datastoreLayout } from '../src/provisioners/postgres/local-files.js';
import { signUp, type Caller } from './helpers/client.js';
import { hasPostgresServer, hasRedisServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { sleep, waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';
import { squat, type Squatter } from './helpers/squatter.js';

const pgOk = requireOrSkip('postgres/initdb', hasPostgresServer());
const redisOk = requireOrSkip('redis-server', hasRedisServer());
// The shared network's story: there, servers listen on 127.0.0.1 at ports anyone on the machine may bind. With
// namespaces nobody else can bind a server's address at all (test/datastore-isolation.test.ts).
const t = useServer({ SLIPWAY_DATASTORE_CHECK_MS: '300', SLIPWAY_NETWORK: 'shared' });

interface DatastoreEvent {
  type: string;
  details: Record<string, unknown>;
}
const eventsOf = async (url: string, as: Caller): Promise<DatastoreEvent[]> =>
  ((await t.api.get(`${url}/events?limit=100`, as)).body as Array<{ event: DatastoreEvent }>).map((e) => e.event);
const portOf = (connectionString: string) => Number(new URL(connectionString).port);

const squatters: Squatter[] = [];
afterEach(async () => {
  for (const s of squatters.splice(0)) await s.close();
});

/** SIGKILLs the datastore's server and takes its port the moment it is free, as the attacking app did. */
async function killAndSquat(id: string, port: number): Promise<Squatter> {
  const { rows } = await t.server.slipway.store.executeSql(
    `select provisioner_state->>'pid' as pid from datastores where id = $1`,
    [id],
  );
  process.kill(Number(rows[0].pid), 'SIGKILL');
  const squatter = await squat(port);
  squatters.push(squatter);
  return squatter;
}

/** The port-taken story, in the datastore's events: unavailable, port taken (the old port), then available again. */
async function expectPortTakenThenBack(url: string, as: Caller, oldPort: number): Promise<string> {
  const taken = await waitFor(
    'a datastore_port_taken event',
    async () => (await eventsOf(url, as)).find((e) => e.type === 'datastore_port_taken'),
    30_000,
  );
  expect(taken.details).toMatchObject({ port: oldPort, status: 'unavailable' });
  const info = await waitFor(
    'the datastore back, on another port',
    async () => {
      if ((await t.api.get(url, as)).body.status !== 'available') return undefined;
      const body = (await t.api.get(`${url}/connection-info`, as)).body;
      return portOf(body.externalConnectionString) !== oldPort ? body : undefined;
    },
    30_000,
  );
  const types = (await eventsOf(url, as)).map((e) => e.type).reverse(); // oldest first
  const down = types.indexOf('datastore_unavailable');
  expect(down).toBeGreaterThanOrEqual(0);
  expect(types.indexOf('datastore_port_taken')).toBeGreaterThan(down);
  expect(types.lastIndexOf('datastore_available')).toBeGreaterThan(types.indexOf('datastore_port_taken'));
  return info.externalConnectionString as string;
}

/** Whether `secret` appears anywhere in what the squatter was sent. */
const received = (squatter: Squatter, secret: string) => squatter.bytes().includes(Buffer.from(secret, 'utf8'));

describe.skipIf(!pgOk)('a Postgres datastore whose port is squatted', () => {
  it('sends the squatter no password, says the port is taken, and comes back on another port (SCRAM only)', async () => {
    const { api, server } = t;
    const owner = await signUp(api);
    const created = await api.post('/v1/postgres', { name: 'b db', plan: 'free' }, owner);
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    const url = `/v1/postgres/${id}`;
    await untilStatus(api, owner, url, 'available', 60_000);
    const before = (await api.get(`${url}/connection-info`, owner)).body;
    const oldPort = portOf(before.externalConnectionString);
    const password = before.password as string;

    const db = new pg.Client({ connectionString: before.externalConnectionString });
    await db.connect();
    expect((await db.query('show password_encryption')).rows[0].password_encryption).toBe('scram-sha-256');
    await db.query(`create table notes (body text); insert into notes values ('kept')`);
    await db.end();
    // The stored hash is SCRAM, and every TCP rule of pg_hba.conf asks for SCRAM (read as Slipway does, over its socket).
    const { socketDir } = datastoreLayout(realpathSync(server.dataDir), id);
    const admin = new pg.Client({ host: socketDir, port: oldPort, user: 'slipway-admin', database: 'postgres' });
    await admin.connect();
    const hash = (
      await admin.query('select rolpassword from pg_authid where rolname = $1', [created.body.databaseUser])
    ).rows[0];
    expect(hash.rolpassword).toMatch(/^SCRAM-SHA-256\$\d+:/);
    const rules = (await admin.query(`select type, auth_method from pg_hba_file_rules`)).rows;
    // The datastore's user and its members (its extra credentials), each from 127.0.0.1 and ::1.
    expect(rules.filter((r) => r.type !== 'local').map((r) => r.auth_method)).toEqual(Array(4).fill('scram-sha-256'));
    expect(rules.filter((r) => r.type === 'local').map((r) => r.auth_method)).toEqual(['peer']);
    await admin.end();

    // A service wired to it: its variable follows the datastore to the new port.
    const service = await api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: `wired-${Date.now().toString(36)}`,
        serviceDetails: { runtime: 'node' },
        envVars: [{ key: 'DATABASE_URL', fromDatabase: { id, property: 'connectionString' } }],
      },
      owner,
    );
    expect(service.status, service.text).toBe(201);
    const wired = async () =>
      (await api.get(`/v1/services/${service.body.service.id}/env-vars`, owner)).body[0].envVar.value as string;
    expect(portOf(await wired())).toBe(oldPort);

    const squatter = await killAndSquat(id, oldPort);
    const after = await expectPortTakenThenBack(url, owner, oldPort);
    const again = new pg.Client({ connectionString: after });
    await again.connect();
    expect((await again.query('select body from notes')).rows).toEqual([{ body: 'kept' }]);
    await again.end();
    expect(await wired()).toBe(after);

    await sleep(1500); // a few more checks of the recovered server
    expect(received(squatter, password), 'the Postgres password reached the squatter').toBe(false);
    expect(received(squatter, encodeURIComponent(password))).toBe(false);
  }, 120_000);
});

describe.skipIf(!redisOk)('a key-value datastore whose port is squatted', () => {
  it("sends the squatter no AUTH (neither the datastore's nor Slipway's admin password) and comes back on another port", async () => {
    const { api, server } = t;
    const owner = await signUp(api);
    const created = await api.post('/v1/key-value', { name: 'b cache', plan: 'starter' }, owner);
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    const url = `/v1/key-value/${id}`;
    await untilStatus(api, owner, url, 'available', 60_000);
    const before = (await api.get(`${url}/connection-info`, owner)).body;
    const oldPort = portOf(before.externalConnectionString);
    const password = decodeURIComponent(new URL(before.externalConnectionString).password);
    const adminPassword = readFileSync(path.join(server.dataDir, 'datastores', id, 'admin.secret'), 'utf8').trim();

    const kv = new Redis(before.externalConnectionString, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await kv.connect();
    await kv.set('greeting', 'kept');
    kv.disconnect();
    await sleep(1200); // appendfsync everysec: on disk before the kill

    const squatter = await killAndSquat(id, oldPort);
    const after = await expectPortTakenThenBack(url, owner, oldPort);
    const again = new Redis(after, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    await again.connect(); // AUTH with the datastore's user and password
    expect(await again.ping()).toBe('PONG');
    expect(await again.get('greeting')).toBe('kept');
    again.disconnect();

    await sleep(1500);
    expect(received(squatter, password), "the datastore user's password reached the squatter").toBe(false);
    expect(received(squatter, adminPassword), "Slipway's admin password reached the squatter").toBe(false);
    expect(squatter.bytes().toString('latin1')).not.toMatch(/AUTH/i);
  }, 120_000);
});
