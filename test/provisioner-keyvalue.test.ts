import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { createKeyValueProvisioner } from '../src/provisioners/keyvalue/index.js';
import { createLocalKeyValue, findKeyValueServer } from '../src/provisioners/keyvalue/local.js';
import { createSharedKeyValue } from '../src/provisioners/keyvalue/shared.js';
import type { KeyValueProvisioner, KeyValueSpec, Placement } from '../src/provisioners/types.js';
import { isRunning } from '../src/runtime/local/proc.js';
import { expectLogRotatedByCheck } from './helpers/log-rotation.js';

/**
 * Real servers only. Without a server binary (local) or a Redis on SHARED_ADMIN_URL (shared) the suite is skipped
 * with a message, except that SLIPWAY_REQUIRE_SERVICES=1 makes either missing a failure.
 */
const REQUIRED = process.env.SLIPWAY_REQUIRE_SERVICES === '1';
const SHARED_ADMIN_URL = process.env.TEST_REDIS_ADMIN_URL ?? 'redis://127.0.0.1:6379';
const serverPath = findKeyValueServer();
const NOBODY = { uid: 65534, gid: 65534 };
const runAs = process.getuid?.() === 0 ? NOBODY : undefined;

/** Polls until `check` gives a value (not the shared helpers: they load the whole server). */
async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 10))) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
  }
  throw new Error(`timed out waiting for ${what}`);
}

const clients: Redis[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.disconnect();
});

/** A connection logged in as `user` (the AUTH is explicit, so a refusal rejects here). */
async function login(placement: Pick<Placement, 'host' | 'port'>, user?: string, password?: string): Promise<Redis> {
  const client = new Redis({
    host: placement.host,
    port: placement.port,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableReadyCheck: false,
  });
  client.on('error', () => undefined);
  clients.push(client);
  await client.connect();
  if (user && password) await client.call('AUTH', user, password);
  return client;
}

const sharedReachable = await (async () => {
  const client = new Redis(SHARED_ADMIN_URL, {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
})();

function spec(overrides: Partial<KeyValueSpec> = {}): KeyValueSpec {
  const id = newId('keyValue');
  return {
    id,
    workspaceId: 'tea-provisioner-test',
    user: 'default',
    password: randomBytes(18).toString('base64url'),
    size: { memoryMb: 64, maxConnections: 50 },
    maxmemoryPolicy: 'allkeys-lru',
    persistent: true,
    ...overrides,
  };
}

const info = async (client: Redis, field: string) =>
  new RegExp(`^${field}:(.*)\\r?$`, 'm').exec(await client.info())?.[1]?.trim();
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const procOf = (placement: Placement) => ({
  pid: placement.state.pid as number,
  startTime: placement.state.startTime as string,
});

describe('key-value provisioners need their servers', () => {
  it.runIf(REQUIRED)('a server binary and a shared Redis are present (SLIPWAY_REQUIRE_SERVICES=1)', () => {
    expect(serverPath, 'valkey-server or redis-server on the PATH').toBeDefined();
    expect(sharedReachable, `a Redis at ${SHARED_ADMIN_URL}`).toBe(true);
  });
  it.runIf(!REQUIRED && (!serverPath || !sharedReachable))('skips what it cannot run', () => {
    if (!serverPath)
      console.warn('skipping the local key-value tests: neither valkey-server nor redis-server is on the PATH');
    if (!sharedReachable)
      console.warn(`skipping the shared key-value tests: no Redis at ${SHARED_ADMIN_URL} (set TEST_REDIS_ADMIN_URL)`);
  });
});

describe.skipIf(!serverPath)('local key-value provisioner (a server per datastore)', () => {
  // Made in beforeAll: a skipped describe still runs its body (and the factory throws without a server binary).
  let dataDir: string;
  let kv: KeyValueProvisioner;
  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-kv-'));
    kv = createLocalKeyValue({ dataDir, runAs });
  });
  const main = spec();
  const custom = spec({ user: 'app', maxmemoryPolicy: 'noeviction' });
  let placement: Placement;
  const dirOf = (s: KeyValueSpec) => path.join(dataDir, 'datastores', s.id);

  afterAll(async () => {
    for (const s of [main, custom])
      await kv?.destroy(s, placement ?? { host: '', port: 0, state: {} }).catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates a server that answers PONG within 500 ms (median), as the run user, with its config in a 0600 file', async () => {
    expect(kv.kind).toBe('local');
    expect(kv.versions()[0]).toMatch(/^\d+\.\d+/);
    const times: number[] = [];
    for (const s of [main, spec(), spec()]) {
      const started = performance.now();
      const p = await kv.create(s);
      expect(await (await login(p, s.user, s.password)).ping()).toBe('PONG');
      times.push(performance.now() - started);
      if (s === main) placement = p;
      else await kv.destroy(s, p);
    }
    console.log(
      `local key-value create -> PONG: ${times.map((t) => t.toFixed(0)).join(', ')} ms (median ${median(times).toFixed(0)} ms)`,
    );
    expect(median(times)).toBeLessThan(500);

    expect(placement).toMatchObject({
      host: '127.0.0.1',
      port: expect.any(Number),
      state: { pid: expect.any(Number), startTime: expect.any(String) },
    });
    const pid = placement.state.pid as number;
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.toContain(main.password);
    const config = path.join(dirOf(main), 'data', 'redis.conf');
    expect(readFileSync(config, 'utf8')).not.toContain(main.password);
    expect(statSync(config).mode & 0o777).toBe(0o600);
    if (runAs) {
      expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(new RegExp(`^Uid:\\s+${runAs.uid}\\s`, 'm'));
      expect(statSync(config).uid).toBe(runAs.uid);
      // Nothing above the server's own dir was opened up for it.
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      expect(statSync(dirOf(main)).mode & 0o077).toBe(0);
    }
  });

  it('serves its user, refuses a wrong password or no login, and runs with the plan settings', async () => {
    const client = await login(placement, main.user, main.password);
    await client.set('greeting', 'hello');
    expect(await client.get('greeting')).toBe('hello');
    await expect(login(placement, main.user, 'wrong-password')).rejects.toThrow(/WRONGPASS/);
    await expect((await login(placement)).get('greeting')).rejects.toThrow(/NOAUTH/);
    expect(await kv.check(main, placement)).toBe(true);
    expect(await kv.check({ ...main, password: 'wrong-password' }, placement)).toBe(false);

    expect(await info(client, 'maxmemory_policy')).toBe('allkeys-lru');
    expect(await info(client, 'maxmemory')).toBe(String(64 * 1024 * 1024));
    expect(await info(client, 'maxclients')).toBe('50');
    expect(await info(client, 'aof_enabled')).toBe('1');
    // Administration is the platform's.
    for (const command of [
      ['CONFIG', 'GET', 'maxmemory'],
      ['ACL', 'LIST'],
      ['SHUTDOWN'],
      ['SAVE'],
      ['REPLICAOF', '127.0.0.1', '1'],
      ['MODULE', 'LIST'],
      ['MONITOR'],
    ]) {
      await expect(client.call(command[0] as string, ...command.slice(1)), command.join(' ')).rejects.toThrow(/NOPERM/);
    }
  });

  it('a user other than default is an ACL user, and default is then disabled', async () => {
    const p = await kv.create(custom);
    const client = await login(p, 'app', custom.password);
    await client.set('k', 'v');
    expect(await info(client, 'maxmemory_policy')).toBe('noeviction');
    await expect(login(p, 'default', custom.password)).rejects.toThrow(/WRONGPASS/);
    await kv.destroy(custom, p);
  });

  it('stop keeps the data; start serves it again on the same port; start re-adopts a running server', async () => {
    await (await login(placement, main.user, main.password)).set('kept', '1');
    await kv.stop(main, placement);
    expect(isRunning(procOf(placement))).toBe(false);
    expect(await kv.check(main, placement)).toBe(false);
    await kv.stop(main, placement); // already stopped: nothing to do

    const started = await kv.start(main, placement);
    expect(started.port).toBe(placement.port);
    expect(started.state.pid).not.toBe(placement.state.pid);
    expect(await (await login(started, main.user, main.password)).get('kept')).toBe('1');
    expect(await kv.start(main, started)).toEqual(started);
    expect(await kv.create(main)).toEqual(started); // a create that is re-run keeps its server
    placement = started;
  });

  it('after kill -9 of the server, start brings it back with the data (AOF)', async () => {
    await (await login(placement, main.user, main.password)).set('before-crash', 'yes');
    process.kill(placement.state.pid as number, 'SIGKILL');
    await waitFor('the server to die', async () => !isRunning(procOf(placement)), 5000);
    expect(await kv.check(main, placement)).toBe(false);
    placement = await kv.start(main, placement);
    expect(await (await login(placement, main.user, main.password)).get('before-crash')).toBe('yes');
  });

  it('persists per plan: acknowledged writes up to about a second before kill -9 survive; a free one keeps nothing, until made persistent live', async () => {
    // Writes acknowledged one after another while the server is killed: all but the last second's are back.
    const client = await login(placement, main.user, main.password);
    const acked: number[] = [];
    const started = Date.now();
    let i = 0;
    while (Date.now() - started < 2500) {
      await client.set(`w:${i}`, String(Date.now()));
      acked.push(Date.now());
      i++;
    }
    const killedAt = Date.now();
    process.kill(placement.state.pid as number, 'SIGKILL');
    await waitFor('the server to die', async () => !isRunning(procOf(placement)), 5000);
    placement = await kv.start(main, placement);
    const after = await login(placement, main.user, main.password);
    const older = acked.flatMap((at, n) => (at < killedAt - 1500 ? [`w:${n}`] : []));
    expect(older.length).toBeGreaterThan(10);
    const values = await after.mget(...older);
    expect(values.filter((v) => v === null)).toEqual([]);

    // A free plan's server (persistent: false) keeps writes in memory only.
    const free = spec({ persistent: false });
    let p = await kv.create(free);
    try {
      await (await login(p, free.user, free.password)).set('lost', '1');
      process.kill(p.state.pid as number, 'SIGKILL');
      await waitFor('the free server to die', async () => !isRunning(procOf(p)), 5000);
      p = await kv.start(free, p);
      const freeClient = await login(p, free.user, free.password);
      expect(await freeClient.get('lost')).toBeNull();
      expect(await info(freeClient, 'aof_enabled')).toBe('0');
      // An upgrade to a paid plan turns the append-only file on without a restart.
      const paid = { ...free, persistent: true };
      expect(await kv.update(paid, p)).toEqual(p);
      expect(await info(freeClient, 'aof_enabled')).toBe('1');
      await freeClient.set('kept', '1');
      await waitFor('the rewrite', async () => (await info(freeClient, 'aof_rewrite_in_progress')) === '0', 10_000);
      await new Promise((r) => setTimeout(r, 1500)); // the next fsync
      process.kill(p.state.pid as number, 'SIGKILL');
      await waitFor('the paid server to die', async () => !isRunning(procOf(p)), 5000);
      p = await kv.start(paid, p);
      expect(await (await login(p, free.user, free.password)).get('kept')).toBe('1');
    } finally {
      await kv.destroy(free, p);
    }
  });

  it('update applies the eviction policy, memory and connections live (no restart) and for later starts', async () => {
    const client = await login(placement, main.user, main.password);
    const changed = { ...main, maxmemoryPolicy: 'volatile-ttl', size: { memoryMb: 32, maxConnections: 20 } };
    expect(await kv.update(changed, placement)).toEqual(placement);
    expect(await info(client, 'maxmemory_policy')).toBe('volatile-ttl');
    expect(await info(client, 'maxmemory')).toBe(String(32 * 1024 * 1024));
    expect(await info(client, 'maxclients')).toBe('20');
    expect(isRunning(procOf(placement))).toBe(true);

    await kv.stop(changed, placement);
    placement = await kv.start(changed, placement);
    expect(await info(await login(placement, main.user, main.password), 'maxmemory_policy')).toBe('volatile-ttl');
  });

  it('check keeps the server log under 10 MiB: the full one moves to server.log.1, the server writes on at the start', async () => {
    await expectLogRotatedByCheck(
      path.join(dirOf(main), 'server.log'),
      { check: () => kv.check(main, placement), stop: () => kv.stop(main, placement) },
      /SIGTERM/,
    );
    placement = await kv.start(main, placement);
  });

  it('destroy stops the server and removes its dir; again is a no-op', async () => {
    await kv.destroy(main, placement);
    expect(isRunning(procOf(placement))).toBe(false);
    expect(existsSync(dirOf(main))).toBe(false);
    await kv.destroy(main, placement);
  });
});

describe.skipIf(!sharedReachable)('shared key-value provisioner (an ACL user per datastore)', () => {
  let kv: KeyValueProvisioner;
  beforeAll(() => {
    kv = createSharedKeyValue({ adminUrl: SHARED_ADMIN_URL });
  });
  const [a, b] = [0, 1].map(() => {
    const s = spec();
    return { ...s, user: s.id };
  }) as [KeyValueSpec, KeyValueSpec];
  const placements = new Map<string, Placement>();
  const at = (s: KeyValueSpec) => placements.get(s.id) as Placement;
  let admin: Redis;

  afterAll(async () => {
    for (const s of [a, b]) await kv?.destroy(s, at(s) ?? { host: '', port: 0, state: {} }).catch(() => undefined);
    admin?.disconnect();
  });

  it('creates a user per datastore that reaches only its own prefix', async () => {
    admin = new Redis(SHARED_ADMIN_URL, { maxRetriesPerRequest: 0 });
    for (const s of [a, b]) placements.set(s.id, await kv.create(s));
    expect(kv.kind).toBe('shared');
    expect(at(a)).toEqual({ host: '127.0.0.1', port: 6379, state: { keyPrefix: `${a.id}:`, tls: false } });
    await waitFor('the server version', async () => kv.versions()[0], 2000);

    const ca = await login(at(a), a.user, a.password);
    const cb = await login(at(b), b.user, b.password);
    await ca.set(`${a.id}:x`, 'a');
    await cb.set(`${b.id}:x`, 'b');
    expect(await ca.get(`${a.id}:x`)).toBe('a');
    await expect(ca.get(`${b.id}:x`)).rejects.toThrow(/NOPERM/);
    await expect(ca.set(`${b.id}:x`, 'stolen')).rejects.toThrow(/NOPERM/);
    await expect(ca.set('unprefixed', '1')).rejects.toThrow(/NOPERM/);
    for (const command of [
      ['FLUSHALL'],
      ['FLUSHDB'],
      ['CONFIG', 'GET', 'maxmemory'],
      ['KEYS', '*'],
      ['SCAN', '0'],
      ['RANDOMKEY'],
      ['ACL', 'LIST'],
      ['CLIENT', 'LIST'],
      ['SHUTDOWN'],
    ]) {
      await expect(ca.call(command[0] as string, ...command.slice(1)), command.join(' ')).rejects.toThrow(/NOPERM/);
    }
    await expect(ca.subscribe(`${b.id}:news`)).rejects.toThrow(/NOPERM/);
    expect(await admin.get(`${b.id}:x`)).toBe('b');
    expect(await kv.check(a, at(a))).toBe(true);
    expect(await kv.check({ ...a, password: 'wrong-password' }, at(a))).toBe(false);
  });

  it('stop refuses logins and drops its connections; start lets it in again', async () => {
    const connected = await login(at(a), a.user, a.password);
    await kv.stop(a, at(a));
    await expect(login(at(a), a.user, a.password)).rejects.toThrow(/WRONGPASS/);
    await expect(connected.ping()).rejects.toThrow();
    expect(await kv.check(a, at(a))).toBe(false);
    await kv.start(a, at(a));
    expect(await kv.check(a, at(a))).toBe(true);
    expect(await (await login(at(a), a.user, a.password)).get(`${a.id}:x`)).toBe('a');
  });

  it('start re-creates a user the server lost (a restart without an aclfile)', async () => {
    await admin.call('ACL', 'DELUSER', a.user);
    expect(await kv.check(a, at(a))).toBe(false);
    await kv.start(a, at(a));
    expect(await kv.check(a, at(a))).toBe(true);
    expect(await kv.update(a, at(a))).toEqual(at(a));
  });

  it('destroy removes its keys (in every database) and its user, and nothing of the others; again is a no-op', async () => {
    const ca = await login(at(a), a.user, a.password);
    await ca.select(3);
    await ca.set(`${a.id}:in-db-3`, '1');
    await kv.destroy(a, at(a));
    expect(await admin.call('ACL', 'GETUSER', a.user)).toBeNull();
    expect(await admin.exists(`${a.id}:x`)).toBe(0);
    await admin.select(3);
    expect(await admin.exists(`${a.id}:in-db-3`)).toBe(0);
    await admin.select(0);
    expect(await admin.get(`${b.id}:x`)).toBe('b');
    await kv.destroy(a, at(a));
  });
});

describe.skipIf(!serverPath || !sharedReachable)('createKeyValueProvisioner', () => {
  it('is shared with an admin URL, else local when a server binary is on the PATH, else undefined', () => {
    expect(createKeyValueProvisioner({ dataDir: tmpdir(), adminUrl: SHARED_ADMIN_URL })?.kind).toBe('shared');
    expect(createKeyValueProvisioner({ dataDir: tmpdir() })?.kind).toBe('local');
    const searchPath = process.env.PATH;
    try {
      process.env.PATH = '/nonexistent';
      expect(createKeyValueProvisioner({ dataDir: tmpdir() })).toBeUndefined();
    } finally {
      process.env.PATH = searchPath;
    }
  });
});
