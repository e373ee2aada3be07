/**
 * The provisioner port: what core/datastores asks of whatever runs a datastore. Every method is
 * safe to re-run (a control plane killed mid-call calls it again on recovery). Provisioners never
 * see HTTP or the store: they get a spec and the state they returned before, and return new state.
 */

/** Where a datastore answers, and what the provisioner must remember to find it again. */
export interface Placement {
  host: string;
  port: number;
  /** Kept on the datastore row (jsonb) and handed back on every later call: pid, start time, key prefix, ... */
  state: Record<string, unknown>;
}

/** Sizes that come from the plan. */
export interface PlanSize {
  memoryMb: number;
  /** Postgres max_connections / Redis maxclients. */
  maxConnections: number;
}

export interface PostgresSpec {
  /** `dpg-…`: names the data dir (local) or is folded into role/database names (cluster). */
  id: string;
  /** Major version, e.g. '15'. */
  version: string;
  databaseName: string;
  databaseUser: string;
  password: string;
  size: PlanSize;
}

export interface KeyValueSpec {
  /** `red-…` */
  id: string;
  /** The user clients log in as (`default` on a local server, an ACL user on a shared one). */
  user: string;
  password: string;
  size: PlanSize;
  /** Redis' spelling, e.g. `allkeys-lru`. */
  maxmemoryPolicy: string;
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
  /** Accepts a login with the spec's credentials right now. */
  check(spec: Spec, placement: Placement): Promise<boolean>;
  /** Applies changed settings (plan size, eviction policy) to a serving datastore; may restart it. */
  update(spec: Spec, placement: Placement): Promise<Placement>;
  /** Stops it and removes all its data. A no-op when already gone. */
  destroy(spec: Spec, placement: Placement): Promise<void>;
}

export type PostgresProvisioner = Provisioner<PostgresSpec>;
export type KeyValueProvisioner = Provisioner<KeyValueSpec>;
