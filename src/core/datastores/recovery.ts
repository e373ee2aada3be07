import { AppError, badRequest, conflict } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { tickLoop } from '../../lib/tick-loop.js';
import type { PostgresBackups, PostgresSpec } from '../../provisioners/types.js';
import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { Events } from '../events.js';
import type { Datastores } from './datastores.js';
import { postgresBackupDays } from './plans.js';
import { placementOf } from './reconciler.js';

/** A base backup is taken when the newest is this old (Render takes them daily too). */
const BACKUP_EVERY_MS = 24 * 3_600_000;
/** A failed base backup is tried again after this long (not at every pass of the loop). */
const BACKUP_RETRY_MS = 10 * 60_000;
/** How long a datastore's recovery window, once read, is answered from memory. */
const WINDOW_TTL_MS = 5000;
type RecoveryWindow = NonNullable<Awaited<ReturnType<PostgresBackups['recoveryWindow']>>>;

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
  datastores: Pick<Datastores, 'driver' | 'restorePostgres'>;
  /** Every datastore (a few per machine): the backup loop's pass. */
  all(): Promise<DatastoreRow[]>;
  events: Pick<Events, 'record'>;
  checkMs: number;
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

  async function info(row: DatastoreRow) {
    const p = backupsOf(row);
    if (postgresBackupDays(row.plan) === 0) return { recoveryStatus: 'NOT_AVAILABLE' as const };
    const window = await windowOf(row, p);
    if (!window) return { recoveryStatus: 'BACKUP_NOT_READY' as const };
    return { recoveryStatus: 'AVAILABLE' as const, startsAt: window.startsAt, endsAt: new Date() };
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
      lastBackup.set(row.id, Date.now() - BACKUP_EVERY_MS + BACKUP_RETRY_MS);
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
    const live = new Set(rows.map((r) => r.id));
    for (const map of [failing.archive, failing.backup, lastBackup, windows])
      for (const id of map.keys()) if (!live.has(id)) map.delete(id);
  }

  /** Seals the source, then makes the new datastore (its reconciler restores it in the background). */
  async function recoverOnce(row: DatastoreRow, input: RecoveryInput): Promise<DatastoreRow> {
    const status = await info(row);
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
    if (row.status === 'available' && !row.suspended && placement)
      await backupsOf(row).seal!(datastores.driver.spec(row) as PostgresSpec, placement).catch((err: Error) => {
        // Its archiver is failing (a full backup disk): its latest writes cannot be restored; no bad input.
        throw new AppError('unavailable', `the latest writes could not be archived: ${err.message.slice(-300)}`);
      });
    return datastores.restorePostgres(row, time, {
      name: input.restoreName ?? `${row.name}-recovered`,
      plan: input.plan ?? row.plan,
      environmentId: input.environmentId ?? row.environmentId,
    });
  }

  /** Sources with a recovery being made now (each is a whole restore: one at a time per database). */
  const recovering = new Set<string>();
  let loop: ReturnType<typeof tickLoop> | undefined;
  return {
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
    async recover(row: DatastoreRow, input: RecoveryInput): Promise<DatastoreRow> {
      const underWay = (await deps.all()).some(
        (r) => r.restoredFrom?.datastoreId === row.id && r.status === 'creating',
      );
      if (recovering.has(row.id) || underWay)
        throw conflict('a recovery of this database is under way; try again once it is available');
      recovering.add(row.id);
      try {
        return await recoverOnce(row, input);
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
