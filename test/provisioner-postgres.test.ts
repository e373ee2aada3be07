import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { findPostgresInstalls } from '../src/provisioners/postgres/binaries.js';
import { createClusterPostgres } from '../src/provisioners/postgres/cluster.js';
import { createPostgresProvisioner } from '../src/provisioners/postgres/index.js';
import { createLocalPostgres } from '../src/provisioners/postgres/local.js';
import type { Placement, PostgresProvisioner, PostgresSpec } from '../src/provisioners/types.js';
import { isRunning } from '../src/runtime/local/proc.js';
import { expectLogRotatedByCheck } from './helpers/log-rotation.js';

/**
 * Real servers only. Without the server binaries (local) or a Postgres at CLUSTER_ADMIN_URL (cluster) the suites are
 * skipped with a message, except that SLIPWAY_REQUIRE_SERVICES=1 makes either missing a failure.
 */
const REQUIRED = process.env.SLIPWAY_REQUIRE_SERVICES === '1';
const CLUSTER_ADMIN_URL = process.env.TEST_POSTGRES_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NOBODY = { uid: 65534, gid: 65534 };
const runAs = process.getuid?.() === 0 ? NOBODY : undefined;
const installed = findPostgresInstalls();
const localVersion = [...installed.keys()].pop();

/** The error code (SQLSTATE) of a refused login, or 'ok'. */
async function login(config: pg.ClientConfig): Promise<string> {
  const client = new pg.Client({ connectionTimeoutMillis: 3000, ...config });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? (err as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function query<R extends pg.QueryResultRow>(
  config: pg.ClientConfig,
  sql: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionTimeoutMillis: 3000, ...config });
  await client.connect();
  try {
    return (await client.query<R>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

const clusterReachable = (await login({ connectionString: CLUSTER_ADMIN_URL })) === 'ok';
const suffix = randomBytes(4).toString('hex');

function spec(name: string, version: string, overrides: Partial<PostgresSpec> = {}): PostgresSpec {
  return {
    id: newId('postgres'),
    workspaceId: 'tea-provisioner-test',
    version,
    databaseName: `${name}_db_${suffix}`,
    databaseUser: `${name}_user_${suffix}`,
    password: randomBytes(18).toString('base64url'),
    size: { memoryMb: 256, maxConnections: 20 },
    ...overrides,
  };
}

const asUser = (s: PostgresSpec, p: Pick<Placement, 'host' | 'port'>, database = s.databaseName): pg.ClientConfig => ({
  host: p.host,
  port: p.port,
  user: s.databaseUser,
  password: s.password,
  database,
});
const procOf = (p: Placement) => ({ pid: p.state.pid as number, startTime: p.state.startTime as string });
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

describe('postgres provisioners need their servers', () => {
  it.runIf(REQUIRED)(
    'the server binaries and a Postgres to administer are present (SLIPWAY_REQUIRE_SERVICES=1)',
    () => {
      expect(localVersion, 'initdb and postgres on the PATH or under /usr/lib/postgresql/<major>/bin').toBeDefined();
      expect(clusterReachable, `a Postgres at ${CLUSTER_ADMIN_URL}`).toBe(true);
    },
  );
  it.runIf(!REQUIRED && (!localVersion || !clusterReachable))('skips what it cannot run', () => {
    if (!localVersion)
      console.warn(
        'skipping the local Postgres tests: initdb/postgres not found on the PATH nor under /usr/lib/postgresql',
      );
    if (!clusterReachable)
      console.warn(
        `skipping the cluster Postgres tests: no Postgres at ${CLUSTER_ADMIN_URL} (set TEST_POSTGRES_ADMIN_URL)`,
      );
  });

  it('createPostgresProvisioner picks cluster with an admin URL, else local when installed', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-pg-pick-'));
    try {
      expect(createPostgresProvisioner({ dataDir, adminUrl: CLUSTER_ADMIN_URL })?.kind).toBe('cluster');
      expect(createPostgresProvisioner({ dataDir, runAs })?.kind).toBe(localVersion ? 'local' : undefined);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe.runIf(localVersion)('local postgres: a server per datastore', () => {
  const version = localVersion as string;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-pg-local-'));
  const provisioner = createLocalPostgres({ dataDir, runAs });
  const created: Array<[PostgresSpec, Placement]> = [];
  const a = spec('a', version, { password: `it's "quoted" \\ ${suffix}` });
  let placement: Placement;

  afterAll(async () => {
    for (const [s, p] of created) await provisioner.destroy(s, p).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lists the installed majors and refuses one that is not', async () => {
    expect(provisioner.versions()).toEqual([...installed.keys()].sort((x, y) => Number(x) - Number(y)));
    await expect(provisioner.create(spec('x', '7'))).rejects.toThrow(/PostgreSQL 7 is not installed here/);
  });

  it('creates a server that accepts its user, as an unprivileged user, keeping the data dir closed', async () => {
    const started = Date.now();
    placement = await provisioner.create(a);
    created.push([a, placement]);
    console.log(`local create (template built on the way) -> accepting connections: ${Date.now() - started} ms`);
    expect(placement.host).toBe('127.0.0.1');
    expect(isRunning(procOf(placement))).toBe(true);
    expect(await provisioner.check(a, placement)).toBe(true);
    await query(asUser(a, placement), 'create table notes (body text)');
    await query(asUser(a, placement), 'insert into notes values ($1)', ['kept']);

    const status = readFileSync(`/proc/${placement.state.pid}/status`, 'utf8');
    if (runAs) expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(runAs.uid));
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(dataDir, 'datastores')).mode & 0o777).toBe(0o700);
    // The server's own dirs are the run user's; the dir holding its log is not (root writes the log).
    expect(statSync(path.join(dataDir, 'datastores', a.id, 'pgdata')).uid).toBe(runAs?.uid ?? process.getuid?.());
    expect(statSync(path.join(dataDir, 'datastores', a.id)).uid).toBe(process.getuid?.());
    expect(readFileSync(path.join(dataDir, 'datastores', a.id, 'postgres.log'), 'utf8')).not.toContain(a.password);
  });

  it('refuses a wrong password, other users and other databases over TCP', async () => {
    expect(await login({ ...asUser(a, placement), password: 'wrong' })).toBe('28P01');
    expect(await login(asUser(a, placement, 'postgres'))).toBe('28000');
    expect(await login({ ...asUser(a, placement), user: 'slipway-admin', password: 'x', database: 'postgres' })).toBe(
      '28000',
    );
    expect(await login({ ...asUser(a, placement), user: 'postgres', database: 'postgres' })).toBe('28000');
  });

  it('creates later datastores from the template within the time budget', async () => {
    const times: number[] = [];
    for (const name of ['b', 'c', 'd']) {
      const s = spec(name, version);
      const started = Date.now();
      const p = await provisioner.create(s);
      created.push([s, p]);
      expect(await login(asUser(s, p))).toBe('ok');
      times.push(Date.now() - started);
      expect(p.port).not.toBe(placement.port);
    }
    console.log(
      `local create from the template -> accepting connections: ${times.join(', ')} ms (median ${median(times)})`,
    );
    expect(median(times)).toBeLessThan(3000);
  });

  it('stops, starts again on the same port with its data, and re-adopts a running server', async () => {
    await provisioner.stop(a, placement);
    expect(isRunning(procOf(placement))).toBe(false);
    expect(await provisioner.check(a, placement)).toBe(false);
    const restarted = await provisioner.start(a, placement);
    expect(restarted.port).toBe(placement.port);
    expect(await query(asUser(a, restarted), 'select body from notes')).toEqual([{ body: 'kept' }]);

    // A restarted Slipway (a new provisioner), even one that lost the pid: the same server, not a second one.
    const again = createLocalPostgres({ dataDir, runAs });
    expect(procOf(await again.start(a, restarted))).toEqual(procOf(restarted));
    expect(procOf(await again.start(a, { ...restarted, state: {} }))).toEqual(procOf(restarted));
    placement = restarted;
  });

  it('comes back after kill -9 with its data, even when the stale postmaster.pid names a live process', async () => {
    const lockFile = path.join(dataDir, 'datastores', a.id, 'pgdata', 'postmaster.pid');
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore', ...runAs });
    onTestFinished(() => void sleeper.kill('SIGKILL'));
    for (const pidReused of [false, true]) {
      process.kill(placement.state.pid as number, 'SIGKILL');
      while (isRunning(procOf(placement))) await new Promise((r) => setTimeout(r, 10));
      expect(existsSync(lockFile)).toBe(true);
      // After a reboot the pid may belong to another process of the run user, which postgres takes for a live postmaster.
      if (pidReused) writeFileSync(lockFile, readFileSync(lockFile, 'utf8').replace(/^\d+/, String(sleeper.pid)));
      expect(await provisioner.check(a, placement)).toBe(false);
      placement = await provisioner.start(a, placement);
      expect(await query(asUser(a, placement), 'select body from notes')).toEqual([{ body: 'kept' }]);
    }
  });

  it('applies a new plan size with a restart, keeping the port, never writing through a link the server put', async () => {
    const bigger = { ...a, size: { memoryMb: 512, maxConnections: 30 } };
    const canary = path.join(dataDir, 'canary');
    writeFileSync(canary, 'root only\n', { mode: 0o600 });
    const conf = path.join(dataDir, 'datastores', a.id, 'pgdata', 'postgresql.conf');
    rmSync(conf);
    symlinkSync(canary, conf);
    const updated = await provisioner.update(bigger, placement);
    expect(readFileSync(canary, 'utf8')).toBe('root only\n');
    expect(lstatSync(conf).isFile()).toBe(true);
    expect(updated.port).toBe(placement.port);
    const [settings] = await query<{ max_connections: string; shared_buffers: string }>(
      asUser(a, updated),
      `select current_setting('max_connections') as max_connections, current_setting('shared_buffers') as shared_buffers`,
    );
    expect(settings).toEqual({ max_connections: '30', shared_buffers: '128MB' });
    // Unchanged settings: no restart.
    expect(procOf(await provisioner.update(bigger, updated))).toEqual(procOf(updated));
    placement = updated;
  });

  it('check keeps the server log under 10 MiB: the full one moves to postgres.log.1, the server writes on at the start', async () => {
    const log = path.join(dataDir, 'datastores', a.id, 'postgres.log');
    await expectLogRotatedByCheck(
      log,
      { check: () => provisioner.check(a, placement), stop: () => provisioner.stop(a, placement) },
      /shut down/,
    );
    placement = await provisioner.start(a, placement);
  });

  it('destroys the server and its files, idempotently', async () => {
    await provisioner.destroy(a, placement);
    expect(isRunning(procOf(placement))).toBe(false);
    expect(existsSync(path.join(dataDir, 'datastores', a.id))).toBe(false);
    await provisioner.destroy(a, placement);
    created.splice(0, 1);
  });

  it('names its socket dir relative to pgdata and is reached through the dir when its path is too long, with no link elsewhere', async () => {
    const longDir = path.join(dataDir, 'a-very-long-directory-name-'.repeat(3));
    mkdirSync(longDir, { mode: 0o700 });
    const long = createLocalPostgres({ dataDir: longDir, runAs });
    const s = spec('long', version);
    const p = await long.create(s);
    const socketDir = path.join(longDir, 'datastores', s.id, 'socket');
    try {
      expect(`${socketDir}/.s.PGSQL.${p.port}`.length).toBeGreaterThan(107);
      expect(readdirSync(socketDir)).toContain(`.s.PGSQL.${p.port}`);
      expect(readFileSync(path.join(longDir, 'datastores', s.id, 'pgdata', 'postgresql.conf'), 'utf8')).toMatch(
        /^unix_socket_directories = '\.\.\/socket'$/m,
      );
      expect(existsSync(path.join(tmpdir(), `slipway-pg-${s.id}`))).toBe(false);
      expect(await long.check(s, p)).toBe(true);
    } finally {
      await long.destroy(s, p);
    }
  });
});

describe.runIf(clusterReachable)('cluster postgres: a role and a database per datastore', () => {
  const provisioner: PostgresProvisioner = createClusterPostgres({ adminUrl: CLUSTER_ADMIN_URL });
  const admin = { connectionString: CLUSTER_ADMIN_URL };
  let version: string;
  let a: PostgresSpec;
  let b: PostgresSpec;
  let placement: Placement;

  afterAll(async () => {
    for (const s of [a, b]) if (s) await provisioner.destroy(s, placement).catch(() => undefined);
  });

  it('creates two datastores; each user reaches its own database only', async () => {
    const [row] = await query<{ v: string }>(
      admin,
      `select (current_setting('server_version_num')::int / 10000)::text as v`,
    );
    version = row!.v;
    a = spec('a', version);
    b = spec('b', version);
    const started = Date.now();
    placement = await provisioner.create(a);
    console.log(`cluster create -> accepting connections: ${Date.now() - started} ms`);
    await provisioner.create(b);
    expect(provisioner.versions()).toEqual([version]);
    expect(placement).toEqual({ host: '127.0.0.1', port: 5432, state: {} });

    expect(await provisioner.check(a, placement)).toBe(true);
    expect(await provisioner.check(b, placement)).toBe(true);
    await query(asUser(a, placement), 'create table notes (body text)');
    expect(await login(asUser(a, placement, b.databaseName))).toBe('42501'); // permission denied for database
    expect(await login(asUser(b, placement, a.databaseName))).toBe('42501');
    const [tags] = await query<{ role: string; db: string; owner: string }>(
      admin,
      `select shobj_description(r.oid, 'pg_authid') as role, shobj_description(d.oid, 'pg_database') as db, pg_get_userbyid(d.datdba) as owner
         from pg_roles r, pg_database d where r.rolname = $1 and d.datname = $2`,
      [a.databaseUser, a.databaseName],
    );
    expect(tags).toEqual({ role: `slipway:${a.id}`, db: `slipway:${a.id}`, owner: a.databaseUser });
  });

  it('re-running create converges; a name taken by someone else is a conflict', async () => {
    await provisioner.create(a);
    expect(await provisioner.check(a, placement)).toBe(true);
    await expect(provisioner.create({ ...a, id: newId('postgres') })).rejects.toMatchObject({ code: 'conflict' });
    await expect(provisioner.create({ ...spec('c', version), databaseName: b.databaseName })).rejects.toMatchObject({
      code: 'conflict',
    });
    await expect(provisioner.create(spec('x', '7'))).rejects.toThrow(/runs version/);
  });

  it('stop refuses logins and ends sessions; start allows them again', async () => {
    const session = new pg.Client(asUser(a, placement));
    session.on('error', () => undefined);
    await session.connect();
    await provisioner.stop(a, placement);
    await expect(session.query('select 1')).rejects.toThrow();
    expect(await provisioner.check(a, placement)).toBe(false);
    expect(await login(asUser(a, placement))).toBe('28000'); // role is not permitted to log in
    await provisioner.start(a, placement);
    expect(await provisioner.check(a, placement)).toBe(true);
  });

  it('update sets the connection limit from the plan', async () => {
    await provisioner.update({ ...a, size: { memoryMb: 256, maxConnections: 7 } }, placement);
    expect(await query(admin, 'select rolconnlimit from pg_roles where rolname = $1', [a.databaseUser])).toEqual([
      { rolconnlimit: 7 },
    ]);
  });

  it('destroy drops the role and the database (only its own), idempotently', async () => {
    await provisioner.destroy(a, placement);
    await provisioner.destroy(a, placement);
    expect(await query(admin, 'select 1 from pg_roles where rolname = $1', [a.databaseUser])).toEqual([]);
    expect(await query(admin, 'select 1 from pg_database where datname = $1', [a.databaseName])).toEqual([]);
    expect(await provisioner.check(b, placement)).toBe(true);
    // Another datastore naming b's role and database destroys nothing of b's.
    await provisioner.destroy({ ...b, id: newId('postgres') }, placement);
    expect(await provisioner.check(b, placement)).toBe(true);
  });
});
