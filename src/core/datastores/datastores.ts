import { randomBytes } from 'node:crypto';
import { AppError, conflict, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { SecretBox } from '../../lib/secret-box.js';
import {
  internalHostOf,
  type KeyValueProvisioner,
  type KeyValueSpec,
  type PostgresProvisioner,
  type PostgresSpec,
} from '../../provisioners/types.js';
import type { DatastoreKind, DatastoreQuery, DatastoreRepo, DatastoreRow } from '../../store/repos/datastores.js';
import type { EnvVarRef } from '../../store/schema/index.js';
import type { Transact } from '../../store/repos/index.js';
import type { ServiceEvent } from '../../model/events.js';
import type { Events } from '../events.js';
import {
  checkIdentifier,
  defaultIdentifier,
  keyValuePersists,
  keyValueSize,
  postgresBackupDays,
  postgresSize,
  redisPolicy,
} from './plans.js';
import { createDatastoreReconciler, placementOf, type DatastoreDriver } from './reconciler.js';
import type { Logger } from '../../lib/logger.js';

export interface Provisioners {
  postgres?: PostgresProvisioner;
  keyValue?: KeyValueProvisioner;
  /** Why one is missing, and how to enable it (the 501's message). */
  missing: { postgres: string; keyValue: string };
}

type IpAllowList = Array<{ cidrBlock: string; description: string }>;
export interface PostgresInput {
  name: string;
  plan: string;
  version?: string;
  databaseName?: string;
  databaseUser?: string;
  environmentId?: string;
  ipAllowList?: IpAllowList;
}
export interface KeyValueInput {
  name: string;
  plan: string;
  maxmemoryPolicy?: string;
  environmentId?: string;
  ipAllowList?: IpAllowList;
}
export type DatastorePatch = { name?: string; plan?: string; maxmemoryPolicy?: string; ipAllowList?: IpAllowList };

export interface DatastoreDeps {
  repo: DatastoreRepo;
  /** Env vars (service or group) that reference a datastore: a referenced one cannot be deleted. */
  referencesTo(datastoreId: string): Promise<string[]>;
  assertEnvironment(workspaceId: string, environmentId: string): Promise<void>;
  provisioners: Provisioners;
  box: SecretBox;
  events: Events;
  /** A row change and its event commit together (the outbox). */
  transact: Transact;
  checkMs: number;
  /** At boot: removes the network namespaces of local servers whose datastore is gone (the runtime's sweepServers). */
  sweepServers?(keep: (id: string) => boolean): Promise<void>;
  /** 402 when the workspace may not add a paid plan now (core/billing/billing.ts). */
  assertMayAddPaid?: (workspaceId: string, kind: 'postgres' | 'key_value', plan: string) => Promise<void>;
  /** Runs before a datastore is deleted (the usage meter's last pass over it). */
  beforeRemove?(): Promise<void>;
  log: Logger;
}

const WHAT = { postgres: 'postgres instance', keyValue: 'key value instance' } as const;

/**
 * Postgres and key-value datastores: the API's intent goes into rows, and the reconciler makes the
 * provisioners match (create, suspend, resume, restart, crash repair). Deletion is done in the call.
 */
export function createDatastores(deps: DatastoreDeps) {
  const { repo, provisioners, box, events } = deps;
  const password = (row: DatastoreRow) => box.open(row.sealedPassword);
  const specOf = (row: DatastoreRow): PostgresSpec | KeyValueSpec =>
    row.kind === 'postgres'
      ? {
          id: row.id,
          workspaceId: row.workspaceId,
          version: row.version,
          databaseName: row.databaseName!,
          databaseUser: row.databaseUser!,
          password: password(row),
          size: postgresSize(row.plan),
          backupRetentionDays: postgresBackupDays(row.plan),
          restoredFrom: row.restoredFrom ?? undefined,
        }
      : {
          id: row.id,
          workspaceId: row.workspaceId,
          user: row.id,
          password: password(row),
          size: keyValueSize(row.plan),
          maxmemoryPolicy: redisPolicy(row.maxmemoryPolicy ?? 'allkeys_lru'),
          persistent: keyValuePersists(row.plan),
        };
  const driver: DatastoreDriver = {
    provisioner: (row) => {
      const p = row.kind === 'postgres' ? provisioners.postgres : provisioners.keyValue;
      // A row made by another provisioner (the configuration changed since) is left alone.
      return p && p.kind === row.provisioner ? p : undefined;
    },
    spec: specOf,
  };
  /** A change of the row and the event that records it, in one transaction; the dispatcher wakes after the commit. */
  async function withEvent<T>(change: (tx: Parameters<Parameters<Transact>[0]>[0]) => Promise<T>, event: ServiceEvent) {
    const result = await deps.transact(async (tx) => {
      const changed = await change(tx);
      await events.record(event, tx.events);
      return changed;
    });
    events.poke();
    return result;
  }
  const reconciler = createDatastoreReconciler({
    repo,
    updateWithEvent: (id, patch, event) => withEvent((tx) => tx.datastores.update(id, patch), event),
    driver,
    checkMs: deps.checkMs,
    log: deps.log,
    sweepServers: deps.sweepServers,
  });

  /**
   * Until when a datastore about to be deleted keeps its backups: a Postgres on a plan with backups that has at least
   * one base backup, for the plan's days. Its server first archives what it committed (a last WAL segment).
   */
  async function keepBackups(row: DatastoreRow, provisioner: unknown, placement: ReturnType<typeof placementOf>) {
    const days = row.kind === 'postgres' ? postgresBackupDays(row.plan) : 0;
    const p = provisioner as PostgresProvisioner | undefined;
    if (!days || !p?.recoveryWindow || !(await p.recoveryWindow(row.id).catch(() => undefined))) return undefined;
    if (placement && row.status === 'available' && !row.suspended)
      await p
        .seal?.(specOf(row) as PostgresSpec, placement)
        .catch((err: Error) =>
          deps.log.warn({ datastoreId: row.id, err: err.message }, 'its last writes could not be archived'),
        );
    return new Date(Date.now() + days * 86_400_000);
  }
  function provisionerFor(kind: DatastoreKind) {
    const p = kind === 'postgres' ? provisioners.postgres : provisioners.keyValue;
    if (!p) throw new AppError('not_configured', provisioners.missing[kind]);
    return p;
  }
  async function get(kind: DatastoreKind, id: string): Promise<DatastoreRow> {
    const row = await repo.get(id);
    if (!row || row.kind !== kind) throw notFound(WHAT[kind]);
    return row;
  }
  async function insert(
    workspaceId: string,
    row: Omit<Parameters<DatastoreRepo['insert']>[0], 'workspaceId' | 'status' | 'sealedPassword'>,
  ) {
    if (row.environmentId) await deps.assertEnvironment(workspaceId, row.environmentId);
    const created = await withEvent(
      (tx) =>
        tx.datastores.insert({
          ...row,
          workspaceId,
          status: 'creating',
          sealedPassword: box.seal(randomBytes(24).toString('base64url')),
        }),
      { workspaceId, datastoreId: row.id, type: 'datastore_created', details: { kind: row.kind } },
    );
    reconciler.kick(created.id);
    return created;
  }
  async function change(row: DatastoreRow, patch: Partial<DatastoreRow>, opts: { restart?: boolean } = {}) {
    const updated = (await repo.update(row.id, patch)) ?? row;
    reconciler.kick(row.id, opts);
    return updated;
  }

  /** How each kind is provisioned here, or `off` with what to install or set: for GET /status and the start-up log. */
  function availability() {
    const of = (kind: DatastoreKind) => {
      const p = kind === 'postgres' ? provisioners.postgres : provisioners.keyValue;
      return p ? { mode: p.kind, versions: p.versions() } : { mode: 'off' as const, note: provisioners.missing[kind] };
    };
    return { postgres: of('postgres'), keyValue: of('keyValue') };
  }

  return {
    get,
    availability,
    list: (q: DatastoreQuery) => repo.list(q),
    /** The running servers' processes (local provisioners), by datastore id: what the metrics sampler reads. */
    async processes(): Promise<Array<{ id: string; pid: number; startTime: string }>> {
      const out = [];
      for (const row of await repo.all()) {
        const placement = placementOf(row);
        const p = row.kind === 'postgres' ? provisioners.postgres : provisioners.keyValue;
        const proc = placement && row.status === 'available' ? p?.serverProcess?.(placement) : undefined;
        if (proc) out.push({ id: row.id, ...proc });
      }
      return out;
    },
    password,
    start: () => reconciler.start(),
    close: () => reconciler.close(),
    async createPostgres(workspaceId: string, input: PostgresInput) {
      const provisioner = provisionerFor('postgres');
      postgresSize(input.plan);
      await deps.assertMayAddPaid?.(workspaceId, 'postgres', input.plan);
      const versions = provisioner.versions();
      // A cluster provisioner learns its server's version just after boot.
      if (!versions.length)
        throw new AppError('unavailable', 'the Postgres server has not answered yet; try again shortly');
      const version = input.version ?? versions[versions.length - 1]!;
      if (!versions.includes(version)) {
        throw new AppError('validation_failed', 'invalid version', [
          { field: 'version', message: `Postgres ${version} is not available here; available: ${versions.join(', ')}` },
        ]);
      }
      return insert(workspaceId, {
        id: newId('postgres'),
        kind: 'postgres',
        name: input.name,
        plan: input.plan,
        version,
        provisioner: provisioner.kind,
        databaseName: checkIdentifier('databaseName', input.databaseName ?? defaultIdentifier(input.name)),
        databaseUser: checkIdentifier('databaseUser', input.databaseUser ?? defaultIdentifier(input.name)),
        environmentId: input.environmentId ?? null,
        ipAllowList: input.ipAllowList ?? [],
      });
    },
    /**
     * A new Postgres datastore restored from `source`'s backups to `time` (point-in-time recovery, recovery.ts): the same
     * version, database and user names as the source, its own password, made by its reconciler as any other.
     */
    async restorePostgres(
      source: DatastoreRow,
      time: Date,
      input: { name: string; plan: string; environmentId?: string | null; toEnd?: boolean },
    ) {
      postgresSize(input.plan);
      await deps.assertMayAddPaid?.(source.workspaceId, 'postgres', input.plan);
      return insert(source.workspaceId, {
        id: newId('postgres'),
        kind: 'postgres',
        name: input.name,
        plan: input.plan,
        version: source.version,
        provisioner: source.provisioner,
        databaseName: source.databaseName,
        databaseUser: source.databaseUser,
        environmentId: input.environmentId ?? null,
        ipAllowList: source.ipAllowList,
        restoredFrom: { datastoreId: source.id, time: time.toISOString(), ...(input.toEnd ? { toEnd: true } : {}) },
      });
    },
    async createKeyValue(workspaceId: string, input: KeyValueInput) {
      const provisioner = provisionerFor('keyValue');
      keyValueSize(input.plan);
      await deps.assertMayAddPaid?.(workspaceId, 'key_value', input.plan);
      return insert(workspaceId, {
        id: newId('keyValue'),
        kind: 'keyValue',
        name: input.name,
        plan: input.plan,
        version: provisioner.versions()[0] ?? 'unknown',
        provisioner: provisioner.kind,
        maxmemoryPolicy: input.maxmemoryPolicy ?? 'allkeys_lru',
        environmentId: input.environmentId ?? null,
        ipAllowList: input.ipAllowList ?? [],
      });
    },
    /** Name and allow list change the row; plan and eviction policy are applied to the running server. */
    async update(row: DatastoreRow, patch: DatastorePatch) {
      if (patch.plan !== undefined) (row.kind === 'postgres' ? postgresSize : keyValueSize)(patch.plan);
      if (patch.plan !== undefined && patch.plan !== row.plan)
        await deps.assertMayAddPaid?.(row.workspaceId, row.kind === 'postgres' ? 'postgres' : 'key_value', patch.plan);
      const applies =
        (patch.plan !== undefined && patch.plan !== row.plan) ||
        (patch.maxmemoryPolicy !== undefined && patch.maxmemoryPolicy !== row.maxmemoryPolicy);
      const busy = row.suspended || row.status === 'creating';
      return change(row, { ...patch, ...(applies && !busy ? { status: 'config_restart' as const } : {}) });
    },
    suspend: (row: DatastoreRow) => change(row, { suspended: true }),
    resume: (row: DatastoreRow) => change(row, { suspended: false }),
    restart(row: DatastoreRow) {
      if (row.suspended || row.status === 'creating')
        throw conflict(`the ${WHAT[row.kind]} is ${row.suspended ? 'suspended' : 'still being created'}`);
      return change(row, {}, { restart: true });
    },
    /**
     * Stops it and removes its data, unless an env var still references it. A Postgres whose plan keeps backups keeps
     * them for its window (docs/datastores.md, "Deleted databases"): everything it committed is archived first.
     */
    async remove(row: DatastoreRow) {
      const refs = await deps.referencesTo(row.id);
      if (refs.length)
        throw conflict(`${row.id} is referenced by environment variables of ${refs.join(', ')}; remove those first`);
      await deps.beforeRemove?.();
      await reconciler.exclusive(row.id, async () => {
        const placement = placementOf(row);
        const provisioner = driver.provisioner(row);
        const backupsUntil = await keepBackups(row, provisioner, placement);
        if (placement && provisioner) await provisioner.destroy(specOf(row), placement);
        if (!backupsUntil) await (provisioner as PostgresProvisioner | undefined)?.dropBackups?.(row.id);
        const kept = backupsUntil ? { backupsKeptUntil: backupsUntil.toISOString() } : {};
        await withEvent(
          async (tx) => {
            if (!(await tx.datastores.delete(row.id))) throw notFound(WHAT[row.kind]);
            if (backupsUntil) await tx.datastores.keepDeleted(row, backupsUntil);
          },
          {
            workspaceId: row.workspaceId,
            datastoreId: row.id,
            type: 'datastore_deleted',
            details: { kind: row.kind, ...kept },
          },
        );
      });
    },
    /** A deleted datastore whose backups are kept (a recovery's source), or undefined. */
    deleted: (id: string) => repo.getDeleted(id),
    connection,
    /** A row's provisioner and spec, for the calls beyond its lifecycle (postgres-access.ts). */
    driver,
    /** Env var references (`fromDatabase`, `fromKeyValue`) to datastores. */
    refs: {
      async check(workspaceId: string, ref: EnvVarRef) {
        const row = await repo.get(ref.id);
        const field = ref.kind === 'postgres' ? 'fromDatabase' : 'fromKeyValue';
        if (!row || row.kind !== ref.kind || row.workspaceId !== workspaceId) {
          throw new AppError('validation_failed', 'invalid environment variables', [
            { field: `${field}.id`, message: `${ref.id} is not a ${WHAT[ref.kind]} of this workspace` },
          ]);
        }
        if (ref.kind === 'keyValue' && ref.property === 'database') {
          throw new AppError('validation_failed', 'invalid environment variables', [
            { field: `${field}.property`, message: 'a key value instance has no database' },
          ]);
        }
      },
      async resolve(ref: EnvVarRef) {
        const row = await repo.get(ref.id);
        if (!row) throw new Error(`${ref.id} no longer exists`);
        return refValue(ref.kind, connection(row), ref.property);
      },
    },
  };

  /**
   * Where and how to connect (Render's connection-info, plus the parts for `fromDatabase`): `host` is the internal one,
   * what the workspace's apps use (a local server's id on their private network); `external` is where it is reached
   * from outside (the Slipway machine: the server's address), the same as internal on the shared network.
   */
  function connection(row: DatastoreRow) {
    const placement = placementOf(row);
    if (!placement) throw conflict(`the ${WHAT[row.kind]} is still being created`);
    const user = row.kind === 'postgres' ? row.databaseUser! : row.id;
    return {
      host: internalHostOf(placement),
      port: placement.port,
      external: { host: placement.host, port: placement.port },
      user,
      password: password(row),
      database: row.databaseName ?? undefined,
      keyPrefix: placement.state.keyPrefix as string | undefined,
    };
  }
}
export type Datastores = ReturnType<typeof createDatastores>;

/** The value an env var reference stands for. */
export function refValue(
  kind: EnvVarRef['kind'],
  c: ReturnType<Datastores['connection']>,
  property: EnvVarRef['property'],
): string {
  const auth = `${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}`;
  switch (property) {
    case 'connectionString':
      return kind === 'postgres'
        ? `postgresql://${auth}@${c.host}:${c.port}/${c.database}`
        : `redis://${auth}@${c.host}:${c.port}`;
    case 'host':
      return c.host;
    case 'port':
      return String(c.port);
    case 'hostport':
      return `${c.host}:${c.port}`;
    case 'user':
      return c.user;
    case 'password':
      return c.password;
    case 'database':
      if (c.database === undefined) throw new AppError('validation_failed', 'a key value instance has no database');
      return c.database;
  }
}
