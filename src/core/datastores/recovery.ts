import { AppError, badRequest, conflict } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { tickLoop } from '../../lib/tick-loop.js';
import type { PostgresBackups, PostgresSpec } from '../../provisioners/types.js';
import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { Datastores } from './datastores.js';
import { postgresBackupDays } from './plans.js';
import { placementOf } from './reconciler.js';

/** A base backup is taken when the newest is this old (Render takes them daily too). */
const BACKUP_EVERY_MS = 24 * 3_600_000;

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

  async function info(row: DatastoreRow) {
    const p = backupsOf(row);
    if (postgresBackupDays(row.plan) === 0) return { recoveryStatus: 'NOT_AVAILABLE' as const };
    const window = await p.recoveryWindow!(row.id);
    if (!window) return { recoveryStatus: 'BACKUP_NOT_READY' as const };
    return { recoveryStatus: 'AVAILABLE' as const, startsAt: window.startsAt, endsAt: new Date() };
  }

  /** When each archiving datastore's newest base backup ended (read from its repository once, then kept). */
  const lastBackup = new Map<string, number>();
  async function backupDue(row: DatastoreRow): Promise<void> {
    const p = backupsOf(row);
    if (!lastBackup.has(row.id)) lastBackup.set(row.id, (await p.recoveryWindow!(row.id))?.lastBackupAt.getTime() ?? 0);
    if (Date.now() - lastBackup.get(row.id)! < BACKUP_EVERY_MS) return;
    const started = Date.now();
    await p.backup!(datastores.driver.spec(row) as PostgresSpec);
    lastBackup.set(row.id, Date.now());
    deps.log.info({ datastoreId: row.id, ms: Date.now() - started }, 'postgres base backup taken');
  }

  /** One pass: every serving, archiving local Postgres whose newest base backup is a day old gets one, one at a time. */
  async function tick() {
    for (const row of await deps.all()) {
      if (row.kind !== 'postgres' || row.provisioner !== 'local' || postgresBackupDays(row.plan) === 0) continue;
      if (row.status !== 'available' || row.suspended) continue;
      await backupDue(row).catch((err: Error) =>
        deps.log.warn({ datastoreId: row.id, err: err.message }, 'postgres base backup failed'),
      );
    }
  }

  let loop: ReturnType<typeof tickLoop> | undefined;
  return {
    info,
    /** A new datastore restored to `restoreTime` (400 outside the window), in Render's body, made in the background. */
    async recover(row: DatastoreRow, input: RecoveryInput): Promise<DatastoreRow> {
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
        await backupsOf(row).seal!(datastores.driver.spec(row) as PostgresSpec, placement);
      return datastores.restorePostgres(row, time, {
        name: input.restoreName ?? `${row.name}-recovered`,
        plan: input.plan ?? row.plan,
        environmentId: input.environmentId ?? row.environmentId,
      });
    },
    start() {
      loop = tickLoop(tick, deps.checkMs, (err) => deps.log.warn({ err }, 'postgres backups: a pass failed'));
      loop.start();
    },
    stop: () => loop?.stop(),
  };
}
export type PostgresRecovery = ReturnType<typeof createPostgresRecovery>;
