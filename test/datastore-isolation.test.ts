/**
 * Issue 10, requirement 2, for datastores: each local Postgres and key-value server runs in a network namespace of its
 * own on its workspace's private network, reached there at its id (Render's internal hostname), at the address in its
 * external connection string from the Slipway machine, and from nowhere else: another workspace's apps can neither
 * resolve nor reach it, nor bind its address while it is down. The namespace lives as long as the server runs.
 */
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { deployFixture, probeVia } from './helpers/apps.js';
import { client, signUp, type Caller } from './helpers/client.js';
import { hasPostgresServer, hasRedisServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { leaseOf } from './helpers/network.js';
import { waitFor } from './helpers/process.js';
import { bootServer, killDatastores, useServer } from './helpers/server.js';

const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT && process.env.SLIPWAY_REQUIRE_SERVICES === '1') throw new Error('network isolation tests need root');
const serversOk = requireOrSkip('postgres and redis-server', hasPostgresServer() && hasRedisServer());
const ENV = { SLIPWAY_NETWORK: 'namespaces', SLIPWAY_DATASTORE_CHECK_MS: '300' };

describe.runIf(IS_ROOT && serversOk)("datastores on their workspace's private network", () => {
  const t = useServer(ENV);
  const infoOf = async (kind: 'postgres' | 'key-value', id: string, as: Caller) =>
    (await t.api.get(`/v1/${kind}/${id}/connection-info`, as)).body;
  const eventsOf = async (url: string, as: Caller) =>
    ((await t.api.get(`${url}/events?limit=100`, as)).body as Array<{ event: { type: string } }>).map(
      (e) => e.event.type,
    );
  /** Asks a tenant's prober app, through the router, to try something on the network. */
  const probe = (slug: string, what: string, q: Record<string, string | number>) =>
    probeVia(t.server.slipway.routerPort, slug, what, q);

  /** A Postgres and a key-value datastore of `as`, available, with their connection info. */
  async function datastoresOf(as: Caller) {
    const pgId = (
      await t.api.post('/v1/postgres', { name: 'db', plan: 'free', databaseName: 'app', databaseUser: 'app_user' }, as)
    ).body.id as string;
    const kvId = (await t.api.post('/v1/key-value', { name: 'cache', plan: 'free' }, as)).body.id as string;
    await untilStatus(t.api, as, `/v1/postgres/${pgId}`, 'available', 60_000);
    await untilStatus(t.api, as, `/v1/key-value/${kvId}`, 'available', 60_000);
    return { pgId, kvId, pg: await infoOf('postgres', pgId, as), kv: await infoOf('key-value', kvId, as) };
  }

  it("A's app reaches A's datastores at their internal hostnames; B's are neither resolvable nor reachable", async () => {
    const [a, b] = [await signUp(t.api), await signUp(t.api)];
    const [mine, theirs] = [await datastoresOf(a), await datastoresOf(b)];
    const app = await deployFixture(t.api, a, 'net-prober');
    expect(app.deploy.status, app.deploy.failureReason ?? '').toBe('live');

    // Internal: the id at the standard port; external: the server's own address, the same port.
    const pgExternal = new URL(mine.pg.externalConnectionString);
    const kvExternal = new URL(mine.kv.externalConnectionString);
    expect(mine.pg.internalConnectionString).toMatch(new RegExp(`^postgresql://app_user:[^@]+@${mine.pgId}:5432/app$`));
    expect(mine.kv.internalConnectionString).toMatch(new RegExp(`^redis://${mine.kvId}:[^@]+@${mine.kvId}:6379$`));
    expect(pgExternal.hostname).toBe(leaseOf(mine.pgId)?.address);
    expect(kvExternal.hostname).toBe(leaseOf(mine.kvId)?.address);
    expect(mine.pg.psqlCommand).toContain(`-h ${pgExternal.hostname} -p 5432`);
    // From the Slipway machine, at the external address, with the password.
    const db = new pg.Client({ connectionString: mine.pg.externalConnectionString });
    await db.connect();
    expect((await db.query('select 1 as ok')).rows).toEqual([{ ok: 1 }]);
    await db.end();
    const kv = new Redis(mine.kv.externalConnectionString, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await kv.connect();
    expect(await kv.ping()).toBe('PONG');
    kv.disconnect();

    const slug = app.service.slug;
    expect(await probe(slug, 'resolve', { name: mine.pgId })).toEqual({ ok: true, address: pgExternal.hostname });
    expect(await probe(slug, 'resolve', { name: mine.kvId })).toEqual({ ok: true, address: kvExternal.hostname });
    expect(await probe(slug, 'connect', { host: mine.pgId, port: 5432 })).toEqual({ ok: true });
    expect(await probe(slug, 'connect', { host: mine.kvId, port: 6379 })).toEqual({ ok: true });
    // Nothing listens on the app's own loopback (servers are not on the host's 127.0.0.1 either, from in here).
    expect(await probe(slug, 'connect', { host: '127.0.0.1', port: 5432 })).toMatchObject({ ok: false });

    // A pre-deploy command (a migration) reaches them by the same names: it runs on the workspace's network.
    const migrate = `node -e "require('net').connect(5432, '${mine.pgId}').on('connect', () => process.exit(0)).on('error', (e) => { console.log(e.code); process.exit(1); })"`;
    const migrated = await deployFixture(t.api, a, 'net-prober', {
      serviceDetails: { runtime: 'node', preDeployCommand: migrate },
    });
    expect(migrated.deploy.status, migrated.deploy.failureReason ?? '').toBe('live');

    for (const [id, port] of [
      [theirs.pgId, 5432],
      [theirs.kvId, 6379],
    ] as const) {
      expect((await probe(slug, 'resolve', { name: id })).ok, `${id} resolves in another workspace`).toBe(false);
      const address = leaseOf(id)?.address;
      expect(address).toMatch(/^10\.213\./);
      expect(
        await probe(slug, 'connect', { host: address!, port }),
        `${id} is reachable from another workspace`,
      ).toMatchObject({ ok: false });
    }
  }, 180_000);

  it("a squatter in another workspace cannot bind a datastore's address, even while its server is down", async () => {
    const [a, b] = [await signUp(t.api), await signUp(t.api)];
    const mine = await datastoresOf(a);
    const squatter = await deployFixture(t.api, b, 'net-prober');
    expect(squatter.deploy.status, squatter.deploy.failureReason ?? '').toBe('live');
    const db = new pg.Client({ connectionString: mine.pg.externalConnectionString });
    await db.connect();
    await db.query(`create table notes (body text); insert into notes values ('kept')`);
    await db.end();

    const targets = [
      {
        id: mine.pgId,
        url: `/v1/postgres/${mine.pgId}`,
        address: new URL(mine.pg.externalConnectionString).hostname,
        port: 5432,
      },
      {
        id: mine.kvId,
        url: `/v1/key-value/${mine.kvId}`,
        address: new URL(mine.kv.externalConnectionString).hostname,
        port: 6379,
      },
    ];
    for (const x of targets)
      expect(await probe(squatter.service.slug, 'bind', { host: x.address, port: x.port })).toEqual({
        ok: false,
        error: 'EADDRNOTAVAIL',
      });
    // Its servers die; the squatter loops on binding their addresses meanwhile, and after.
    for (const x of targets) await probe(squatter.service.slug, 'squat', { host: x.address, port: x.port, ms: 6000 });
    const { rows } = await t.server.slipway.store.executeSql(
      `select provisioner_state->>'pid' as pid from datastores where id = any($1)`,
      [targets.map((x) => x.id)],
    );
    for (const { pid } of rows) process.kill(Number(pid), 'SIGKILL');
    for (const x of targets) {
      await waitFor(
        `${x.id} to be repaired`,
        async () => {
          const types = await eventsOf(x.url, a);
          return types.includes('datastore_unavailable') && types[0] === 'datastore_available';
        },
        30_000,
      );
      expect(await eventsOf(x.url, a)).not.toContain('datastore_port_taken');
    }
    const again = new pg.Client({
      connectionString: (await infoOf('postgres', mine.pgId, a)).externalConnectionString,
    });
    await again.connect();
    expect((await again.query('select body from notes')).rows).toEqual([{ body: 'kept' }]);
    await again.end();
    expect(
      (await probe(squatter.service.slug, 'received', {})).filter((r: { squatted?: string }) => r.squatted),
    ).toEqual([]);
  }, 180_000);

  it("keeps a running server's namespace across a Slipway restart, removes it on suspend and delete, and sweeps deleted ones at boot", async () => {
    const a = await signUp(t.api);
    const mine = await datastoresOf(a);
    const pgUrl = `/v1/postgres/${mine.pgId}`;
    const before = leaseOf(mine.pgId);
    expect(before && existsSync(before.netns)).toBe(true);

    // Suspended: no server, no namespace. Resumed: a new one, and the connection info says where.
    expect((await t.api.post(`${pgUrl}/suspend`, undefined, a)).status).toBe(202);
    await untilStatus(t.api, a, pgUrl, 'suspended');
    expect(leaseOf(mine.pgId)).toBeUndefined();
    expect(existsSync(before!.netns)).toBe(false);
    expect((await t.api.post(`${pgUrl}/resume`, undefined, a)).status).toBe(202);
    await untilStatus(t.api, a, pgUrl, 'available', 60_000);
    const resumed = await infoOf('postgres', mine.pgId, a);
    expect(new URL(resumed.externalConnectionString).hostname).toBe(leaseOf(mine.pgId)?.address);

    // The key-value datastore disappears from the store while its server runs; then Slipway restarts.
    await t.server.slipway.store.executeSql('delete from datastores where id = $1', [mine.kvId]);
    const kvLease = leaseOf(mine.kvId)!;
    const first = t.server;
    await first.stop();
    const next = await bootServer(ENV, { dataDir: first.dataDir, databaseUrl: first.databaseUrl });
    next.close = async () => {
      await killDatastores(next.slipway).catch(() => undefined);
      await next.stop();
      await first.close();
    };
    t.server = next;
    t.api = client(next.url);
    // The running Postgres is re-adopted where it was; the deleted datastore's namespace is gone.
    expect(await infoOf('postgres', mine.pgId, a)).toEqual(resumed);
    const c = new pg.Client({ connectionString: resumed.externalConnectionString });
    await c.connect();
    await c.end();
    expect(leaseOf(mine.kvId)).toBeUndefined();
    expect(existsSync(kvLease.netns)).toBe(false);

    expect((await t.api.delete(pgUrl, a)).status).toBe(204);
    expect(leaseOf(mine.pgId)).toBeUndefined();
  }, 180_000);
});
