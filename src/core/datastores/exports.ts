import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { conflict, notFound } from '../../lib/errors.js';
import { createFairSlots } from '../../lib/fair-slots.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { PostgresExportRepo, PostgresExportRow } from '../../store/repos/postgres-exports.js';
import type { Datastores } from './datastores.js';
import { servingDump } from './postgres-access.js';

/** Exports are kept this long (Render keeps its exports 7 days too). */
export const EXPORT_TTL_MS = 7 * 24 * 3_600_000;
/** A running export renews its heartbeat this often; one silent for STALE_MS was cut short (a restart, a crash). */
const HEARTBEAT_MS = 30_000;
const STALE_MS = 4 * HEARTBEAT_MS;
/** Exports kept per datastore: a new one past this removes the oldest, so repeated POSTs cannot fill the disk. */
export const EXPORTS_KEPT = 5;
/** Dumps at once on this machine, one per workspace: one workspace's exports never hold up another's. */
const DUMP_SLOTS = { slots: 2, perKey: 1 };

export interface ExportDeps {
  repo: PostgresExportRepo;
  datastores: Pick<Datastores, 'driver'>;
  /** `<data dir>/exports`: a 0700 dir per datastore, holding `<export id>.dump`. */
  dir: string;
  /** Whether a datastore still exists (the files of deleted ones go at the next prune). */
  exists(datastoreId: string): Promise<boolean>;
  log: Pick<Logger, 'warn'>;
}

/**
 * Exports of datastores: `pg_dump -Fc` of a Postgres database (Render's `/export`), an RDB snapshot of a key-value
 * server (Slipway's). POST starts one in the background and answers at once; its row (in `postgres_exports`, named
 * before key-value exports existed) says running, done (with its size) or failed. At most EXPORTS_KEPT per datastore; the files stay 7 days, then the maintenance job removes
 * them (`prune`); the list never shows an expired one.
 */
export function createDatastoreExports(deps: ExportDeps) {
  const { repo } = deps;
  const slots = createFairSlots(DUMP_SLOTS);
  const dirOf = (datastoreId: string) => path.join(deps.dir, datastoreId);
  const fileOf = (row: Pick<PostgresExportRow, 'id' | 'datastoreId'>) =>
    path.join(dirOf(row.datastoreId), `${row.id}.dump`);

  function privateDir(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
  }

  /** Runs the dump into a partial file, renamed into place once complete. Never rejects: a failure is the row's. */
  async function dump(
    write: (file: string) => Promise<void>,
    row: PostgresExportRow,
    workspaceId: string,
  ): Promise<void> {
    const file = fileOf(row);
    const partial = `${file}.partial`;
    // Beating while it waits for a slot too: a queued export is not a stale one.
    const beat = setInterval(() => void repo.heartbeat(row.id).catch(() => undefined), HEARTBEAT_MS);
    let release: (() => void) | undefined;
    try {
      release = await slots.acquire(workspaceId);
      privateDir(deps.dir);
      privateDir(dirOf(row.datastoreId));
      await write(partial);
      renameSync(partial, file);
      await repo.finish(row.id, { status: 'done', sizeBytes: statSync(file).size, error: null });
    } catch (err) {
      rmSync(partial, { force: true });
      const error = (err as Error).message.slice(-2000);
      deps.log.warn({ datastoreId: row.datastoreId, exportId: row.id, error }, 'datastore export failed');
      await repo.finish(row.id, { status: 'failed', sizeBytes: null, error }).catch(() => undefined);
    } finally {
      clearInterval(beat);
      release?.();
    }
  }

  async function list(datastore: DatastoreRow): Promise<PostgresExportRow[]> {
    const now = new Date();
    await repo.failStale(
      datastore.id,
      new Date(now.getTime() - STALE_MS),
      'interrupted: Slipway stopped during the dump',
    );
    return repo.list(datastore.id, now);
  }

  return {
    list,

    /** Starts an export (409 while another of the same datastore runs); `done` settles when it has finished. */
    async create(datastore: DatastoreRow): Promise<{ row: PostgresExportRow; done: Promise<void> }> {
      const write = servingDump(deps.datastores, datastore);
      const kept = await list(datastore); // newest first
      if (kept.some((e) => e.status === 'running'))
        throw conflict('an export of this datastore is running; try again once it is done');
      const dropped = kept.slice(EXPORTS_KEPT - 1);
      await repo.remove(dropped.map((e) => e.id));
      for (const e of dropped) rmSync(fileOf(e), { force: true });
      const now = new Date();
      const row = await repo.insert({
        id: newId('postgresExport'),
        datastoreId: datastore.id,
        status: 'running',
        createdAt: now,
        heartbeatAt: now,
        expiresAt: new Date(now.getTime() + EXPORT_TTL_MS),
      });
      return { row, done: dump(write, row, datastore.workspaceId) };
    },

    /** The file of a finished, unexpired export of this datastore: 404 otherwise (409 while it runs or if it failed). */
    async file(datastore: DatastoreRow, exportId: string) {
      const row = await repo.get(exportId);
      if (!row || row.datastoreId !== datastore.id || row.expiresAt <= new Date()) throw notFound('export');
      if (row.status !== 'done')
        throw conflict(`the export ${row.status === 'running' ? 'is still running' : 'failed'}`);
      const file = fileOf(row);
      if (!existsSync(file)) throw notFound('export');
      const extension = datastore.kind === 'postgres' ? 'dump' : 'rdb';
      return { path: file, size: statSync(file).size, name: `${datastore.id}-${row.id}.${extension}` };
    },

    /** Removes expired exports (rows and files) and the dirs of datastores that are gone; returns how many went. */
    async prune(now = new Date()): Promise<number> {
      const expired = await repo.deleteExpired(now);
      for (const row of expired) {
        rmSync(fileOf(row), { force: true });
        rmSync(`${fileOf(row)}.partial`, { force: true });
      }
      const dirs = existsSync(deps.dir) ? readdirSync(deps.dir) : [];
      for (const id of dirs) if (!(await deps.exists(id))) rmSync(dirOf(id), { recursive: true, force: true });
      return expired.length;
    },
  };
}
export type DatastoreExports = ReturnType<typeof createDatastoreExports>;
