/**
 * The provisioner port: what core/datastores asks of whatever runs a datastore. Every method is
 * safe to re-run (a control plane killed mid-call calls it again on recovery). Provisioners never
 * see HTTP or the store: they get a spec and the state they returned before, and return new state.
 */

/** Where a datastore answers, and what the provisioner must remember to find it again. */
export interface Placement {
  host: string;
  port: number;
  /** Kept on the datastore row (jsonb) and handed back on every later call: pid, start time, key prefix, internalHost ... */
  state: Record<string, unknown>;
}

/**
 * The host its workspace's apps connect to: `state.internalHost` when the server has a namespace of its own on the
 * workspace's private network (its id, as Render's internal hostnames), else `host`, the same for everyone.
 */
export const internalHostOf = (placement: Placement): string =>
  typeof placement.state.internalHost === 'string' ? placement.state.internalHost : placement.host;

/** Sizes that come from the plan. */
export interface PlanSize {
  memoryMb: number;
  /** Postgres max_connections / Redis maxclients. */
  maxConnections: number;
}

export interface PostgresSpec {
  /** `dpg-…`: names the data dir (local) or is folded into role/database names (cluster); a local server's internal hostname. */
  id: string;
  /** Whose private network a local server joins (namespaces mode). */
  workspaceId: string;
  /** Major version, e.g. '15'. */
  version: string;
  databaseName: string;
  databaseUser: string;
  password: string;
  size: PlanSize;
  /** Continuous archiving and base backups kept this many days (a local server's plan); 0 or unset: none. */
  backupRetentionDays?: number;
  /** Made by point-in-time recovery: restored from this datastore's backups, to this instant (ISO 8601). */
  restoredFrom?: { datastoreId: string; time: string; toEnd?: boolean } | undefined;
}

export interface KeyValueSpec {
  /** `red-…`; a local server's internal hostname. */
  id: string;
  /** Whose private network a local server joins (namespaces mode). */
  workspaceId: string;
  /** The user clients log in as (`default` on a local server, an ACL user on a shared one). */
  user: string;
  password: string;
  size: PlanSize;
  /** Redis' spelling, e.g. `allkeys-lru`. */
  maxmemoryPolicy: string;
  /** Writes are kept on disk (append-only file, fsync every second); false: in memory only, gone at a restart. */
  persistent: boolean;
}

export interface Provisioner<Spec> {
  /** `local` (own server process), `cluster` (role+database on an existing Postgres), `shared` (ACL user on an existing Redis). */
  readonly kind: 'local' | 'cluster' | 'shared';
  /** Versions it can create (Postgres majors installed, or the key-value server's version). */
  versions(): string[];
  /** Creates it and starts it serving. Re-running after a partial create finishes the job. */
  create(spec: Spec): Promise<Placement>;
  /** Makes it serve again from its kept data (resume, re-adopt at boot, after a crash); a no-op when it serves. */
  start(spec: Spec, placement: Placement): Promise<Placement>;
  /** Stops serving and keeps the data (suspend). */
  stop(spec: Spec, placement: Placement): Promise<void>;
  /**
   * Accepts a login with the spec's credentials right now. Local servers answer this over their private unix socket,
   * never over TCP: whatever holds the TCP port while the server is down must not be sent a credential.
   */
  check(spec: Spec, placement: Placement): Promise<boolean>;
  /** Applies changed settings (plan size, eviction policy) to a serving datastore; may restart it. */
  update(spec: Spec, placement: Placement): Promise<Placement>;
  /** Stops it and removes all its data. A no-op when already gone. */
  destroy(spec: Spec, placement: Placement): Promise<void>;
  /**
   * Serves it again on a new port, after start/update threw PortTakenError (local servers: its own port was bound by
   * someone else while it was down). Returns the new placement; clients must be told the new port.
   */
  relocate?(spec: Spec, placement: Placement): Promise<Placement>;
  /** The server's process while it runs (local servers), whose CPU and memory the metrics sampler reads. */
  serverProcess?(placement: Placement): { pid: number; startTime: string } | undefined;
}

/** A server could not listen on its port: something else bound it while the server was down. */
export class PortTakenError extends Error {
  constructor(
    readonly port: number,
    message: string,
  ) {
    super(message);
    this.name = 'PortTakenError';
  }
}

/** One login role of a Postgres datastore (Render's `/credentials` item); createdAt is unknown for the default one. */
export interface PostgresCredential {
  username: string;
  default: boolean;
  createdAt?: string | undefined;
  openConnections: number;
}

/** What a serving Postgres datastore offers besides its lifecycle: extra login roles and `pg_dump` exports. */
export interface PostgresAccess {
  listCredentials(spec: PostgresSpec, placement: Placement): Promise<PostgresCredential[]>;
  createCredential(
    spec: PostgresSpec,
    placement: Placement,
    credential: { username: string; password: string },
  ): Promise<void>;
  /** Rejects with a 404 AppError when `username` is not one of its extra credentials. */
  dropCredential(spec: PostgresSpec, placement: Placement, username: string): Promise<void>;
  /** A custom-format dump of its database into `file` (which it creates). */
  dump(spec: PostgresSpec, placement: Placement, file: string): Promise<void>;
}

/** Continuous archiving and point-in-time recovery (local servers, with pgBackRest). */
export interface PostgresBackups {
  /** A full base backup now (a plan without backups: nothing). */
  backup(spec: PostgresSpec): Promise<void>;
  /** The earliest restorable instant and the newest base backup's end; undefined before the first backup. */
  recoveryWindow(id: string): Promise<{ startsAt: Date; lastBackupAt: Date } | undefined>;
  /** Makes everything the serving datastore committed until now restorable (before a recovery to a recent instant). */
  seal(spec: PostgresSpec, placement: Placement): Promise<void>;
  /** Whether the server's archiver is failing now (its last failure is newer than its last success), and on what. */
  archiveFailure(spec: PostgresSpec, placement: Placement): Promise<{ wal: string; at: Date } | undefined>;
  /** Removes a datastore's backups (`destroy` keeps them: a deleted database stays recoverable for its window). */
  dropBackups(id: string): Promise<void>;
}

export type PostgresProvisioner = Provisioner<PostgresSpec> & Partial<PostgresAccess> & Partial<PostgresBackups>;
/** A key-value server's data as one RDB snapshot file (an export). */
export interface KeyValueDump {
  /** A point-in-time RDB snapshot of the server's data into `file` (which it creates). */
  dump(spec: KeyValueSpec, placement: Placement, file: string): Promise<void>;
}

export type KeyValueProvisioner = Provisioner<KeyValueSpec> & Partial<KeyValueDump>;
