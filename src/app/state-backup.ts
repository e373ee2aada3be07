import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { run, TOOL_ENV } from '../lib/exec.js';
import type { Logger } from '../lib/logger.js';
import { tickLoop } from '../lib/tick-loop.js';
import { openStore, type Store } from '../store/db.js';

/**
 * Slipway's own state in one archive, and back (docs/operations.md, "Backing up Slipway"): the store (PGlite's data
 * dir, or `pg_dump` of DATABASE_URL), the secret key, the uploaded sources, the builds' artifacts, uploaded blueprints
 * and the router's certificates. The datastores' data is not in it: Postgres comes back from its pgBackRest
 * repository (SLIPWAY_BACKUP_DIR), key-value from an export.
 *
 * The archive is a tar of three members: the manifest, the store's dump, and a gzipped tar of the data dir's files.
 */
const FORMAT = 1;
const MANIFEST = 'slipway-backup.json';
const FILES = 'files.tar.gz';
const STORE_DUMP = { pglite: 'store-pglite.tar.gz', postgres: 'store-postgres.dump' } as const;
const RESTORE_TIMEOUT_MS = 3_600_000;

interface Manifest {
  format: number;
  createdAt: string;
  store: Store['kind'];
}

/** The data dir's entries that are state, not what a start remakes (caches, build dirs, running instances' files). */
function stateEntries(dataDir: string): string[] {
  const entries = ['secret.key', 'router-tls', 'blueprints'].filter((name) => existsSync(path.join(dataDir, name)));
  const services = path.join(dataDir, 'services');
  for (const id of existsSync(services) ? readdirSync(services) : []) {
    const sources = path.join(services, id, 'sources');
    for (const name of existsSync(sources) ? readdirSync(sources) : [])
      if (name.endsWith('.archive')) entries.push(`services/${id}/sources/${name}`);
    if (existsSync(path.join(services, id, 'artifacts'))) entries.push(`services/${id}/artifacts`);
  }
  return entries;
}

/** Writes the archive to `file` (atomically: a `.partial` file renamed once complete). */
export async function writeStateBackup(opts: { store: Store; dataDir: string; file: string }): Promise<void> {
  const file = path.resolve(opts.file);
  const work = mkdtempSync(path.join(path.dirname(file), '.slipway-backup-'));
  try {
    const manifest: Manifest = { format: FORMAT, createdAt: new Date().toISOString(), store: opts.store.kind };
    writeFileSync(path.join(work, MANIFEST), JSON.stringify(manifest, null, 2));
    // The store first: a file a row refers to was written before the row (sources, artifacts), so it is in the copy.
    await opts.store.dump(path.join(work, STORE_DUMP[opts.store.kind]));
    // Hard links within the artifacts (the files kept deploys share) stay links; the app user's ownership is kept.
    await tar.c(
      { gzip: true, file: path.join(work, FILES), cwd: opts.dataDir, portable: false },
      stateEntries(opts.dataDir),
    );
    const partial = `${file}.partial`;
    // It holds the secret key: readable by its owner only.
    await tar.c({ file: partial, cwd: work, mode: 0o600 }, [MANIFEST, STORE_DUMP[opts.store.kind], FILES]);
    renameSync(partial, file);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Unpacks an archive into an empty data dir (and, for a Postgres store, an empty database at `databaseUrl`). What
 * ran on the machine it came from is forgotten: its instances are recorded as stopped and its datastores' places
 * cleared, so the next start runs the live deploys afresh from their artifacts and adopts none of the old processes.
 */
export async function restoreStateBackup(opts: { file: string; dataDir: string; databaseUrl?: string }) {
  const dataDir = path.resolve(opts.dataDir);
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0)
    throw new Error(`${dataDir} is not empty: restore into a new data dir (SLIPWAY_DATA_DIR)`);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const work = mkdtempSync(path.join(path.dirname(dataDir), '.slipway-restore-'));
  try {
    await tar.x({ file: opts.file, cwd: work, strict: true });
    const manifest = JSON.parse(readFileSync(path.join(work, MANIFEST), 'utf8')) as Manifest;
    if (manifest.format !== FORMAT)
      throw new Error(`unknown backup format ${manifest.format} (this Slipway reads ${FORMAT})`);
    const wanted = opts.databaseUrl ? 'postgres' : 'pglite';
    if (manifest.store !== wanted)
      throw new Error(
        `this backup holds a ${manifest.store} store; restore it with ${manifest.store === 'postgres' ? 'DATABASE_URL set to an empty database' : 'DATABASE_URL unset (the embedded store)'}`,
      );
    await tar.x({ file: path.join(work, FILES), cwd: dataDir, strict: true, preserveOwner: true });
    const dump = path.join(work, STORE_DUMP[manifest.store]);
    if (opts.databaseUrl) await restorePostgres(dump, opts.databaseUrl);
    else await restorePglite(dump, path.join(dataDir, 'pglite'));
    const store = await openStore({ dataDir, databaseUrl: opts.databaseUrl });
    try {
      await store.executeSql(
        `update instances set status = 'stopped', pid = null, start_time = null, stopped_at = coalesce(stopped_at, now())
          where status in ('starting', 'running')`,
      );
      await store.executeSql(`update datastores set provisioner_state = '{}'::jsonb`);
    } finally {
      await store.close();
    }
    return manifest;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function restorePglite(dump: string, dir: string) {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = new PGlite(dir, { loadDataDir: new Blob([readFileSync(dump)]) });
  await db.waitReady;
  await db.close();
}

async function restorePostgres(dump: string, databaseUrl: string) {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      `select count(*)::int as n from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema')`,
    );
    if (rows[0]!.n > 0) throw new Error('the database at DATABASE_URL is not empty: restore into a new database');
  } finally {
    await client.end();
  }
  const target = new URL(databaseUrl);
  const env = { ...TOOL_ENV, PGPASSWORD: decodeURIComponent(target.password) };
  target.password = '';
  const args = ['--no-owner', '--no-privileges', '--exit-on-error', `--dbname=${target.href}`, dump];
  const result = await run({ file: 'pg_restore', args, env }, { timeoutMs: RESTORE_TIMEOUT_MS });
  if (result.exitCode !== 0) throw new Error(`pg_restore failed: ${result.output.trim().slice(-1000)}`);
}

const SCHEDULED = /^slipway-\d{8}T\d{9}Z\.tar$/;

/**
 * Backups taken by the running Slipway (SLIPWAY_STATE_BACKUP_DIR): one when the newest there is `everyMs` old, named by
 * its time (`slipway-20261202T091400123Z.tar`, to the millisecond), the `keep` newest kept. The embedded store's only way while it runs.
 */
export function scheduleStateBackups(opts: {
  store: Store;
  dataDir: string;
  settings: { dir: string; everyMs: number; keep: number };
  log: Pick<Logger, 'info' | 'warn'>;
}) {
  const { dir, everyMs, keep } = opts.settings;
  return tickLoop(
    async () => {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const taken = readdirSync(dir)
        .filter((name) => SCHEDULED.test(name))
        .sort();
      const newest = taken.at(-1);
      if (newest && Date.now() - statSync(path.join(dir, newest)).mtimeMs < everyMs) return;
      const name = `slipway-${new Date().toISOString().replace(/[-:.]/g, '')}.tar`;
      const started = Date.now();
      await writeStateBackup({ store: opts.store, dataDir: opts.dataDir, file: path.join(dir, name) });
      opts.log.info({ file: name, ms: Date.now() - started }, "Slipway's state backed up");
      for (const old of [...taken, name].slice(0, -keep)) rmSync(path.join(dir, old), { force: true });
    },
    Math.min(everyMs, 60_000),
    (err) => opts.log.warn({ err }, "Slipway's state backup failed"),
  );
}
