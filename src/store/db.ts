import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { run, TOOL_ENV } from '../lib/exec.js';
import { PACKAGE_ROOT } from '../lib/paths.js';
import * as schema from './schema/index.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/** The SQLSTATE of a Postgres error (Drizzle may wrap the driver's error as `cause`). */
export function pgCode(err: unknown): string | undefined {
  const e = err as { code?: string; cause?: { code?: string } } | undefined;
  return e?.cause?.code ?? e?.code;
}

/** A unique index refused the row (23505). */
export const isUniqueViolation = (err: unknown) => pgCode(err) === '23505';

/** The rows of a raw `db.execute` (both drivers answer `{rows}`). */
export const rowsOf = (result: unknown) => (result as { rows: Record<string, unknown>[] }).rows;

/** Raw SQL as pg-boss wants it: statements with parameters, or a parameterless script. */
export type ExecuteSql = (text: string, values?: unknown[]) => Promise<{ rows: any[] }>;

export interface Store {
  kind: 'pglite' | 'postgres';
  db: Db;
  executeSql: ExecuteSql;
  /**
   * Refreshes the planner's statistics. PGlite has no autovacuum: without this a table that grew since it was
   * created keeps its first estimates, and a keyset page (`where service_id = $1 order by id desc limit 20`) is
   * planned as a sort of every row of the service instead of a walk down its index. Postgres' autovacuum does it.
   */
  analyze(): Promise<void>;
  /** Resolves when the store answers a trivial query within `timeoutMs`. */
  ping(timeoutMs?: number): Promise<void>;
  /**
   * Calls `listener` with the name of each table written (TABLES_CHANNEL), by this process before its commit returns;
   * with undefined when some may have been missed (PGlite reopened). Other processes' writes reach a Postgres
   * store's connections only while the pool holds some: src/app/start.ts also LISTENs on a dedicated one.
   */
  onTableChange(listener: (table: string | undefined) => void): void;
  /**
   * One consistent copy of the whole store into `file` (Slipway's own backup, app/state-backup.ts): PGlite's data dir
   * as a gzipped tarball, or Postgres' `pg_dump` in its custom format.
   */
  dump(file: string): Promise<void>;
  close(): Promise<void>;
}

const MIGRATIONS = path.join(PACKAGE_ROOT, 'drizzle');
/** A store's dump (pg_dump) may take this long. */
const DUMP_TIMEOUT_MS = 3_600_000;

/** The channel on which the store's triggers NOTIFY each table written (drizzle/0015_table_notices.sql). */
export const TABLES_CHANNEL = 'slipway_tables';

function createTableListeners() {
  const listeners: Array<(table: string | undefined) => void> = [];
  return {
    add: (listener: (table: string | undefined) => void) => void listeners.push(listener),
    emit: (table: string | undefined) => listeners.forEach((listener) => listener(table)),
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Errors after which a PGlite instance cannot be trusted: its WASM module aborted (RuntimeError:
 * "memory access out of bounds", "null function or function signature mismatch", or a bare
 * thrown value), or overflowed its stack (each overflow leaks stack until the module aborts).
 */
const isPgliteFatal = (err: unknown) =>
  err instanceof WebAssembly.RuntimeError ||
  !(err instanceof Error) ||
  (err instanceof RangeError && /call stack/i.test(err.message));

/** Answered while PGlite is reopened; 57P03 (cannot_connect_now) is a store outage: a 503 `unavailable`. */
const reopening = () =>
  Object.assign(new Error('the embedded database failed and is being reopened; retry shortly'), { code: '57P03' });

const REOPEN_RETRY_MS = 1000;

/** Every table outside the system schemas, quoted for `analyze`. */
const OWN_TABLES = `select format('%I.%I', schemaname, tablename) as name from pg_tables
  where schemaname not in ('pg_catalog', 'information_schema')`;

/**
 * PGlite behind a client that stays the same object: when the instance fails fatally, it is
 * closed and a new one opened on the same data dir (Postgres' crash recovery replays the WAL;
 * nothing is re-run), and calls meanwhile fail as an outage instead of reaching a dead module.
 */
async function openPglite(dataDir: string): Promise<Store> {
  const dir = path.join(dataDir, 'pglite');
  const tables = createTableListeners();
  const start = async () => {
    const instance = new PGlite(dir);
    await instance.waitReady;
    // PGlite hands a NOTIFY to its listeners before the query that committed it resolves.
    try {
      await instance.listen(TABLES_CHANNEL, tables.emit);
    } catch (err) {
      await instance.close().catch(() => undefined); // a retry opens the data dir again: never two instances on it
      throw err;
    }
    return instance;
  };
  let current = await start();
  let reopened: Promise<void> | undefined;
  let closed = false;
  const reopen = () =>
    (reopened ??= (async () => {
      await withTimeout(current.close(), 5000, 'closing the failed PGlite').catch(() => undefined);
      while (!closed) {
        try {
          current = await start();
          tables.emit(undefined); // whatever the failed instance committed unheard
          return;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, REOPEN_RETRY_MS));
        }
      }
    })().finally(() => (reopened = undefined)));
  /** Runs `call` on the current instance; a fatal error starts a reopen and reads as an outage. */
  const guarded =
    <A extends unknown[], R>(call: (instance: PGlite, ...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      if (reopened) throw reopening();
      const instance = current;
      try {
        return await call(instance, ...args);
      } catch (err) {
        // A call queued on an instance being replaced fails with it ("PGlite is closed"): an outage too.
        const replaced = instance !== current || reopened !== undefined;
        if (!replaced && !isPgliteFatal(err)) throw err;
        if (!replaced && !closed) void reopen();
        throw Object.assign(reopening(), { cause: err });
      }
    };
  // What Drizzle and pg-boss use of PGlite: query(), exec() and transaction().
  const client = {
    query: guarded((c, text: string, params?: unknown[], options?: Parameters<PGlite['query']>[2]) =>
      c.query(text, params, options),
    ),
    exec: guarded((c, text: string) => c.exec(text)),
    transaction: guarded((c, fn: Parameters<PGlite['transaction']>[0]) => c.transaction(fn)),
  };
  const db = drizzlePglite({ client: client as unknown as PGlite, schema });
  await migratePglite(db, { migrationsFolder: MIGRATIONS });
  const analyze = async () => {
    // The tables Slipway and pg-boss write: a bare `analyze` also redoes the system catalogs, which
    // barely change, and took ~0.6 s of every start.
    const names = rowsOf(await client.query(OWN_TABLES)).map((r) => r.name);
    if (names.length > 0) await client.exec(`analyze ${names.join(', ')}`);
  };
  // Statistics as of now, before the first query is planned (see Store.analyze).
  await analyze();
  return {
    kind: 'pglite',
    analyze,
    db: db as unknown as Db,
    // PGlite's query() speaks the extended protocol (one statement); exec() runs scripts.
    executeSql: async (text, values) => {
      if (values && values.length > 0) return client.query(text, values);
      const results = await client.exec(text);
      return results[results.length - 1] ?? { rows: [] };
    },
    ping: (timeoutMs = 2000) =>
      withTimeout(
        client.query('select 1').then(() => undefined),
        timeoutMs,
        'PGlite',
      ),
    onTableChange: tables.add,
    dump: async (file) => {
      // Inside a transaction, PGlite runs no other statement while its files are read: the copy is of one instant.
      await client.exec('checkpoint');
      const tarball = await guarded((c) => c.transaction(() => c.dumpDataDir('gzip')))();
      await writeFile(file, Buffer.from(await tarball.arrayBuffer()), { mode: 0o600 });
    },
    close: async () => {
      closed = true;
      await reopened;
      if (!current.closed) await current.close();
    },
  };
}

async function openPostgres(url: string): Promise<Store> {
  const tables = createTableListeners();
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 5000,
    // Postgres sends a session its own NOTIFYs just before the answer to its COMMIT: with every pooled connection
    // listening, this process hears of its writes before they return (src/core/read-cache.ts). pg-pool awaits
    // onConnect before it hands the connection out; @types/pg declares it void.
    // eslint-disable-next-line @typescript-eslint/no-misused-promises
    onConnect: async (client) => {
      client.on('notification', (msg) => {
        if (msg.channel === TABLES_CHANNEL) tables.emit(msg.payload);
      });
      await client.query(`listen ${TABLES_CHANNEL}`);
    },
  });
  pool.on('error', () => {
    /* a dropped idle connection; the next query reconnects, /api/health reports outages */
  });
  // A checked-out connection (a transaction holds one) has no listener of the pool's: an 'error' it emits (the server
  // gone, a confused protocol after an outage) would be an uncaught exception and end the process. The query under
  // way is rejected on its own; the pool drops the broken connection when it is released.
  pool.on('connect', (client) =>
    client.on('error', () => {
      /* reported through the failing query */
    }),
  );
  const db = drizzlePg(pool, { schema });
  // Several Slipway processes may share one Postgres: migrate under an advisory lock.
  const lock = await pool.connect();
  try {
    await lock.query(`select pg_advisory_lock(hashtext('slipway.migrations'))`);
    await migratePg(db, { migrationsFolder: MIGRATIONS });
  } finally {
    await lock.query(`select pg_advisory_unlock(hashtext('slipway.migrations'))`).catch(() => undefined);
    lock.release();
  }
  return {
    kind: 'postgres',
    db: db as unknown as Db,
    // Postgres' autovacuum keeps the statistics.
    analyze: async () => undefined,
    executeSql: (text, values) => pool.query(text, values),
    onTableChange: tables.add,
    async dump(file) {
      // The password goes in the environment, not the arguments every user's `ps` shows.
      const target = new URL(url);
      const env = { ...TOOL_ENV, PGPASSWORD: decodeURIComponent(target.password) };
      target.password = '';
      const cmd = { file: 'pg_dump', args: ['--format=custom', '--no-owner', `--file=${file}`, target.href], env };
      const result = await run(cmd, { timeoutMs: DUMP_TIMEOUT_MS });
      if (result.exitCode !== 0) throw new Error(`pg_dump failed: ${result.output.trim().slice(-1000)}`);
    },
    ping: (timeoutMs = 2000) =>
      withTimeout(
        db.execute(sql`select 1`).then(() => undefined),
        timeoutMs,
        'Postgres',
      ),
    close: () => pool.end(),
  };
}

export function openStore(options: { databaseUrl?: string; dataDir: string }): Promise<Store> {
  return options.databaseUrl ? openPostgres(options.databaseUrl) : openPglite(options.dataDir);
}
