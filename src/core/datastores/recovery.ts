import { AppError, badRequest, conflict, notFound } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { tickLoop } from '../../lib/tick-loop.js';
import type { PostgresBackups, PostgresSpec } from '../../provisioners/types.js';
import type { DatastoreRow, DeletedDatastore } from '../../store/repos/datastores.js';
import type { Events } from '../events.js';
import type { Datastores } from './datastores.js';
import { postgresBackupDays } from './plans.js';
import { placementOf } from './reconciler.js';

/** A base backup is taken when the newest is this old (Render takes them daily too). */
const BACKUP_EVERY_MS = 24 * 3_600_000;
/** How long a datastore's recovery window, once read, is answered from memory. */
const WINDOW_TTL_MS = 5000;
type RecoveryWindow = NonNullable<Awaited<ReturnType<PostgresBackups['recoveryWindow']>>>;

/** What a recovery restores from: a datastore, or a deleted one whose backups are kept (its window ends at deletedAt). */
export interface RecoverySource {
  row: DatastoreRow;
  deletedAt?: Date;
}

export interface RecoveryInput {
  restoreTime: string;
  restoreName?: string | undefined;
  plan?: string | undefined;
  environmentId?: string | undefined;
}

/**
 * Point-in-time recovery of Postgres datastores (Render's `/v1/postgres/:id/recovery`, docs/datastores.md "Backups and
 * point-in-time recovery"): what a datastore's backups allow, a new datastore restored to an instant, and the loop that
 * takes each archiving datastore's daily base backup (its first as soon as it serves).
 */
export function createPostgresRecovery(deps: {
  datastores: Pick<Datastores, 'driver' | 'restorePostgres' | 'get' | 'deleted'>;
  /** Every datastore (a few per machine): the backup loop's pass. */
  all(): Promise<DatastoreRow[]>;
  /** Deleted datastores whose kept backups' window ended by `now`, and forgetting one once its backups are gone. */
  expired(now: Date): Promise<DeletedDatastore[]>;
  forget(id: string): Promise<void>;
  events: Pick<Events, 'record'>;
  checkMs: number;
  /** A failed base backup is tried again after this long, not at every pass (SLIPWAY_BACKUP_RETRY_MS). */
  retryMs: number;
  log: Pick<Logger, 'info' | 'warn'>;
}) {
  const { datastores } = deps;
  function backupsOf(row: DatastoreRow): Partial<PostgresBackups> {
    const p = datastores.driver.provisioner(row) as Partial<PostgresBackups> | undefined;
    if (row.provisioner === 'cluster')
      throw new AppError(
        'not_configured',
        "this Postgres is a database on the cluster's own server (SLIPWAY_POSTGRES_ADMIN_URL): its backups are that server's, not Slipway's",
      );
    if (!p?.recoveryWindow)
      throw new AppError(
        'not_configured',
        'point-in-time recovery needs pgBackRest on this machine (apt-get install pgbackrest)',
      );
    return p;
  }

  /**
   * Each datastore's window, read from its repository (a `pgbackrest info` process) at most every WINDOW_TTL_MS: a
   * client polling GET …/recovery starts no process per request.
   */
  const windows = new Map<string, { at: number; window: Promise<RecoveryWindow | undefined> }>();
  function windowOf(row: DatastoreRow, p: Partial<PostgresBackups>) {
    const known = windows.get(row.id);
    if (known && Date.now() - known.at < WINDOW_TTL_MS) return known.window;
    const window = p.recoveryWindow!(row.id);
    windows.set(row.id, { at: Date.now(), window });
    window.catch(() => windows.delete(row.id));
    return window;
  }

  async function info({ row, deletedAt }: RecoverySource) {
    const p = backupsOf(row);
    if (postgresBackupDays(row.plan) === 0) return { recoveryStatus: 'NOT_AVAILABLE' as const };
    const window = await windowOf(row, p);
    if (!window) return { recoveryStatus: 'BACKUP_NOT_READY' as const };
    return { recoveryStatus: 'AVAILABLE' as const, startsAt: window.startsAt, endsAt: deletedAt ?? new Date() };
  }

  /** When each archiving datastore's newest base backup ended (read from its repository once, then kept). */
  const lastBackup = new Map<string, number>();
  /** What is failing now, by datastore: its archiver (since when, on which segment), its last base backup. */
  const failing = { archive: new Map<string, { wal: string; at: Date }>(), backup: new Map<string, string>() };
  let archiving = 0;
  const record = (row: DatastoreRow, type: string, details: Record<string, unknown> = {}) =>
    deps.events.record({
      workspaceId: row.workspaceId,
      datastoreId: row.id,
      type,
      details: { kind: row.kind, ...details },
    });

  async function backupDue(row: DatastoreRow, p: Partial<PostgresBackups>): Promise<void> {
    if (!lastBackup.has(row.id)) lastBackup.set(row.id, (await p.recoveryWindow!(row.id))?.lastBackupAt.getTime() ?? 0);
    if (Date.now() - lastBackup.get(row.id)! < BACKUP_EVERY_MS) return;
    const started = Date.now();
    try {
      await p.backup!(datastores.driver.spec(row) as PostgresSpec);
    } catch (err) {
      const reason = (err as Error).message.slice(-500);
      lastBackup.set(row.id, Date.now() - BACKUP_EVERY_MS + deps.retryMs);
      if (!failing.backup.has(row.id)) await record(row, 'datastore_backup_failed', { reason });
      failing.backup.set(row.id, reason);
      throw err;
    }
    lastBackup.set(row.id, Date.now());
    windows.delete(row.id); // a new base backup moves the window's start when older ones expire
    failing.backup.delete(row.id);
    await record(row, 'datastore_backup_completed', { durationMs: Date.now() - started });
  }

  /** The archiver's state: an event when it starts failing (Render's postgres_wal_archive_failed), kept for /status. */
  async function watchArchiver(row: DatastoreRow, p: Partial<PostgresBackups>): Promise<void> {
    const placement = placementOf(row);
    if (!placement) return;
    const failure = await p.archiveFailure!(datastores.driver.spec(row) as PostgresSpec, placement);
    if (!failure) return void failing.archive.delete(row.id);
    if (!failing.archive.has(row.id)) await record(row, 'datastore_wal_archive_failed', { wal: failure.wal });
    failing.archive.set(row.id, failure);
  }

  /** Deleted datastores whose window is over: their backups go, then their record (docs/datastores.md). */
  async function purgeExpired() {
    for (const gone of await deps.expired(new Date())) {
      const p = datastores.driver.provisioner(gone.row) as Partial<PostgresBackups> | undefined;
      // Made by another provisioner (the configuration changed since): its repository is not this one's to remove.
      try {
        if (p?.dropBackups) await p.dropBackups(gone.row.id);
      } catch (err) {
        // An S3 bucket out of reach: its record stays, and the next pass tries again.
        deps.log.warn(
          { datastoreId: gone.row.id, err: (err as Error).message },
          "could not remove a deleted database's backups",
        );
        continue;
      }
      await deps.forget(gone.row.id);
      deps.log.info({ datastoreId: gone.row.id }, "a deleted database's backups expired and were removed");
    }
  }

  /** One pass over every serving, archiving local Postgres: its archiver, and its base backup when one is due. */
  async function tick() {
    let seen = 0;
    const rows = await deps.all();
    for (const row of rows) {
      if (row.kind !== 'postgres' || row.provisioner !== 'local' || postgresBackupDays(row.plan) === 0) continue;
      if (row.status !== 'available' || row.suspended) continue;
      seen++;
      const p = backupsOf(row);
      await watchArchiver(row, p).catch((err: Error) =>
        deps.log.warn({ datastoreId: row.id, err: err.message }, 'postgres archiver check failed'),
      );
      await backupDue(row, p).catch((err: Error) =>
        deps.log.warn({ datastoreId: row.id, err: err.message }, 'postgres base backup failed'),
      );
    }
    archiving = seen;
    await purgeExpired();
    const live = new Set(rows.map((r) => r.id));
    for (const map of [failing.archive, failing.backup, lastBackup, windows])
      for (const id of map.keys()) if (!live.has(id)) map.delete(id);
  }

  /** Seals the source, then makes the new datastore (its reconciler restores it in the background). */
  async function recoverOnce(source: RecoverySource, input: RecoveryInput): Promise<DatastoreRow> {
    const { row } = source;
    const status = await info(source);
    if (status.recoveryStatus !== 'AVAILABLE')
      throw conflict(
        status.recoveryStatus === 'NOT_AVAILABLE'
          ? `the ${row.plan} plan keeps no backups: point-in-time recovery needs a paid plan`
          : 'the first base backup of this database is not taken yet; try again shortly',
      );
    const time = new Date(input.restoreTime);
    if (Number.isNaN(time.getTime()) || time < status.startsAt || time > status.endsAt)
      throw badRequest(
        `restoreTime must be within the recovery window, ${status.startsAt.toISOString()} to ${status.endsAt.toISOString()}`,
      );
    // What the source committed up to now becomes restorable (it may be idle since the instant asked for).
    const placement = placementOf(row);
    if (!source.deletedAt && row.status === 'available' && !row.suspended && placement)
      await backupsOf(row).seal!(datastores.driver.spec(row) as PostgresSpec, placement).catch((err: Error) => {
        // Its archiver is failing (a full backup disk): its latest writes cannot be restored; no bad input.
        throw new AppError('unavailable', `the latest writes could not be archived: ${err.message.slice(-300)}`);
      });
    return datastores.restorePostgres(row, time, {
      name: input.restoreName ?? `${row.name}-recovered`,
      plan: input.plan ?? row.plan,
      environmentId: input.environmentId ?? row.environmentId,
      // A deleted database's window ends at its deletion, after its last commit: that instant means all it archived.
      toEnd: !!source.deletedAt && time >= status.endsAt,
    });
  }

  /** Sources with a recovery being made now (each is a whole restore: one at a time per database). */
  const recovering = new Set<string>();
  let loop: ReturnType<typeof tickLoop> | undefined;
  return {
    /** A Postgres datastore of that id, or a deleted one whose backups are kept; else a 404. */
    async source(id: string): Promise<RecoverySource> {
      const row = await datastores
        .get('postgres', id)
        .catch((err: unknown) =>
          err instanceof AppError && err.code === 'not_found' ? undefined : Promise.reject(err),
        );
      if (row) return { row };
      const gone = await datastores.deleted(id);
      if (!gone || gone.row.kind !== 'postgres') throw notFound('postgres instance');
      return { row: gone.row, deletedAt: gone.deletedAt };
    },
    info,
    /** For GET /status: archiving datastores, and how many have a failing archiver or last base backup. */
    status() {
      const ids = new Set([...failing.archive.keys(), ...failing.backup.keys()]);
      return { archiving, failing: ids.size };
    },
    /**
     * A new datastore restored to `restoreTime` (400 outside the window), in Render's body, made in the background;
     * a 409 while another recovery of the same database is made (a client repeating its POST).
     */
    async recover(source: RecoverySource, input: RecoveryInput): Promise<DatastoreRow> {
      const { row } = source;
      const underWay = (await deps.all()).some(
        (r) => r.restoredFrom?.datastoreId === row.id && r.status === 'creating',
      );
      if (recovering.has(row.id) || underWay)
        throw conflict('a recovery of this database is under way; try again once it is available');
      recovering.add(row.id);
      try {
        return await recoverOnce(source, input);
      } finally {
        recovering.delete(row.id);
      }
    },
    start() {
      loop = tickLoop(tick, deps.checkMs, (err) => deps.log.warn({ err }, 'postgres backups: a pass failed'));
      loop.start();
    },
    stop: () => loop?.stop(),
  };
}
export type PostgresRecovery = ReturnType<typeof createPostgresRecovery>;
