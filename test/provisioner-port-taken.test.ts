/**
 * Local servers whose TCP port someone else bound while they were down (issue 10), at the provisioner level: start
 * says so (PortTakenError), relocate serves them on a new port with their data, and Slipway's own connections
 * (check, readiness, live config) go only to the server's private unix socket, even from a data dir too deep for a
 * socket path. The squatter is sent nothing at all.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { createLocalKeyValue, findKeyValueServer } from '../src/provisioners/keyvalue/local.js';
import { findPostgresInstalls } from '../src/provisioners/postgres/binaries.js';
import { datastoreLayout } from '../src/provisioners/postgres/local-files.js';
import { createLocalPostgres } from '../src/provisioners/postgres/local.js';
import { scramVerifies } from '../src/provisioners/postgres/scram.js';
import {
  PortTakenError,
  type KeyValueProvisioner,
  type Placement,
  type Provisioner,
} from '../src/provisioners/types.js';
import { isRunning, readStat } from '../src/runtime/local/proc.js';
import { sleep } from './helpers/process.js';
import { squat, type Squatter } from './helpers/squatter.js';

const runAs = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
const pgVersion = [...findPostgresInstalls().keys()].pop();
const redisServer = findKeyValueServer();
const procOf = (p: Placement) => ({ pid: p.state.pid as number, startTime: p.state.startTime as string });

async function killHard(p: Placement): Promise<void> {
  process.kill(procOf(p).pid, 'SIGKILL');
  while (isRunning(procOf(p))) await sleep(10);
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-port-taken-'));
const squatters: Squatter[] = [];
afterAll(async () => {
  for (const s of squatters) await s.close();
  rmSync(dataDir, { recursive: true, force: true });
});
async function squatted(port: number): Promise<Squatter> {
  const s = await squat(port);
  squatters.push(s);
  return s;
}

/**
 * Kills the server, binds its port first, and checks the provisioner's answer: not serving, start a PortTakenError
 * naming the port, relocate serving it on another.
 */
async function killSquatAndRelocate<S>(
  provisioner: Provisioner<S>,
  spec: S,
  placement: Placement,
): Promise<{ squatter: Squatter; moved: Placement }> {
  await killHard(placement);
  const squatter = await squatted(placement.port);
  expect(await provisioner.check(spec, placement)).toBe(false);
  const err = await provisioner.start(spec, placement).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PortTakenError);
  expect((err as PortTakenError).port).toBe(placement.port);
  const moved = await provisioner.relocate!(spec, placement);
  expect(moved.port).not.toBe(placement.port);
  return { squatter, moved };
}

describe.runIf(pgVersion)('local postgres on a taken port', () => {
  const provisioner = createLocalPostgres({ dataDir, runAs });
  const spec = {
    id: newId('postgres'),
    workspaceId: 'tea-port-taken',
    version: pgVersion!,
    databaseName: 'app',
    databaseUser: 'app_user',
    password: randomBytes(18).toString('base64url'),
    size: { memoryMb: 128, maxConnections: 10 },
  };
  let placement: Placement;
  afterAll(() => provisioner.destroy(spec, placement).catch(() => undefined));
  const asUser = (p: Placement): pg.ClientConfig => ({
    host: p.host,
    port: p.port,
    user: spec.databaseUser,
    password: spec.password,
    database: spec.databaseName,
  });

  it('start is a PortTakenError naming the port; relocate serves it, data and all, on a new one; the squatter hears nothing', async () => {
    placement = await provisioner.create(spec);
    const db = new pg.Client(asUser(placement));
    await db.connect();
    await db.query(`create table notes (body text); insert into notes values ('kept')`);
    await db.end();

    const { squatter, moved } = await killSquatAndRelocate(provisioner, spec, placement);
    expect(await provisioner.check(spec, moved)).toBe(true);
    const again = new pg.Client(asUser(moved));
    await again.connect();
    expect((await again.query('select body from notes')).rows).toEqual([{ body: 'kept' }]);
    await again.end();
    placement = moved;
    expect(squatter.connections).toBe(0);
  }, 60_000);

  it('check compares the password with the stored SCRAM verifier, sending none', async () => {
    const admin = new pg.Client({
      host: datastoreLayout(dataDir, spec.id).socketDir,
      port: placement.port,
      user: 'slipway-admin',
      database: 'postgres',
    });
    await admin.connect();
    const stored = (await admin.query('select rolpassword from pg_authid where rolname = $1', [spec.databaseUser]))
      .rows[0].rolpassword as string;
    await admin.end();
    expect(stored).toMatch(/^SCRAM-SHA-256\$/);
    expect(scramVerifies(stored, spec.password)).toBe(true);
    expect(scramVerifies(stored, `${spec.password}x`)).toBe(false);
    expect(scramVerifies(`md5${'0'.repeat(32)}`, spec.password)).toBe(false);
    // A verifier the datastore's user set by hand with a huge iteration count is refused unhashed, not worked through.
    const hostile = stored.replace(/^SCRAM-SHA-256\$\d+:/, 'SCRAM-SHA-256$5000000:');
    const started = performance.now();
    expect(scramVerifies(hostile, spec.password)).toBe(false);
    expect(performance.now() - started).toBeLessThan(50);
    expect(await provisioner.check({ ...spec, password: 'not-the-password' }, placement)).toBe(false);
    expect(await provisioner.check(spec, placement)).toBe(true);

    // The datastore's own user sets that verifier (Postgres stores a pre-hashed one as it is, a few seconds' work in the
    // user's own backend; hashing it would cost Slipway's event loop a second at every check): checks stay instant.
    const asUser = new pg.Client({
      host: '127.0.0.1',
      port: placement.port,
      user: spec.databaseUser,
      password: spec.password,
      database: spec.databaseName,
    });
    await asUser.connect();
    await asUser.query(`alter role ${spec.databaseUser} password '${hostile}'`);
    await asUser.end();
    for (let i = 0; i < 3; i++) {
      const begun = performance.now();
      expect(await provisioner.check(spec, placement)).toBe(false);
      expect(performance.now() - begun).toBeLessThan(500);
    }
  }, 60_000);
});

describe.runIf(redisServer)('local key-value on a taken port, and on its socket only', () => {
  // Deep enough that <dir>/datastores/<id>/data/redis.sock does not fit in a socket address.
  const deepDir = path.join(dataDir, 'kv-'.repeat(20), 'deeper-still');
  mkdirSync(deepDir, { recursive: true, mode: 0o700 });
  let provisioner: KeyValueProvisioner; // made in beforeAll: the factory throws without a server binary
  beforeAll(() => {
    provisioner = createLocalKeyValue({ dataDir: deepDir, runAs });
  });
  const spec = {
    id: newId('keyValue'),
    workspaceId: 'tea-port-taken',
    user: 'default',
    password: randomBytes(18).toString('base64url'),
    size: { memoryMb: 32, maxConnections: 20 },
    maxmemoryPolicy: 'allkeys-lru',
    persistent: true,
  };
  const data = path.join(deepDir, 'datastores', spec.id, 'data');
  let placement: Placement;
  afterAll(() => provisioner.destroy(spec, placement).catch(() => undefined));

  async function login(p: Placement): Promise<Redis> {
    const client = new Redis({
      host: p.host,
      port: p.port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableReadyCheck: false,
    });
    client.on('error', () => undefined);
    await client.connect();
    await client.auth(spec.password);
    return client;
  }

  it('serves on a 0700 socket in its data dir, reached through the dir when its path is too long', async () => {
    placement = await provisioner.create(spec);
    const socket = path.join(data, 'redis.sock');
    expect(socket.length).toBeGreaterThan(107);
    expect(statSync(socket).isSocket()).toBe(true);
    expect(statSync(socket).mode & 0o777).toBe(0o700);
    expect(readFileSync(path.join(data, 'redis.conf'), 'utf8')).toMatch(/^unixsocket redis\.sock$/m);
    expect(await provisioner.check(spec, placement)).toBe(true);
    expect(await provisioner.check({ ...spec, password: 'wrong' }, placement)).toBe(false);
  });

  it('start is a PortTakenError; relocate serves it on a new port; the squatter hears nothing, update included', async () => {
    const client = await login(placement);
    await client.set('kept', 'yes');
    client.disconnect();
    await sleep(1100); // appendfsync everysec
    const { squatter, moved } = await killSquatAndRelocate(provisioner, spec, placement);
    placement = moved;
    expect(await provisioner.check(spec, moved)).toBe(true);
    await provisioner.update({ ...spec, maxmemoryPolicy: 'volatile-ttl' }, moved);
    const again = await login(moved);
    expect(await again.get('kept')).toBe('yes');
    expect(await again.info('memory')).toMatch(/^maxmemory_policy:volatile-ttl\r?$/m); // applied on the socket
    again.disconnect();
    expect(squatter.connections).toBe(0);
  });

  it('restarts a server it adopts that has no socket (started by an older Slipway), so it can reach it', async () => {
    await provisioner.stop(spec, placement);
    const config = path.join(data, 'redis.conf');
    writeFileSync(config, readFileSync(config, 'utf8').replace(/^unixsocket.*\n/gm, ''));
    const old = spawn(redisServer!, ['/proc/self/cwd/redis.conf'], {
      cwd: data,
      stdio: 'ignore',
      detached: true,
      env: {},
      ...runAs,
    });
    onTestFinished(() => void old.kill('SIGKILL'));
    const oldProc = { pid: old.pid!, startTime: readStat(old.pid!)!.startTime };
    const tcp = { ...placement, state: oldProc };
    for (
      let i = 0;
      i < 200 &&
      !(await login(tcp).then(
        (c) => (c.disconnect(), true),
        () => false,
      ));
      i++
    )
      await sleep(20);
    expect(await provisioner.check(spec, tcp)).toBe(false); // nothing on the socket
    placement = await provisioner.start(spec, tcp);
    expect(placement.state.pid).not.toBe(oldProc.pid);
    await sleep(100);
    expect(isRunning(oldProc)).toBe(false);
    expect(await provisioner.check(spec, placement)).toBe(true);
  });
});
