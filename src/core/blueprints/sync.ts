import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { EnvGroupRow } from '../../store/repos/env-groups.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { EnvVarInput } from '../services/env-vars.js';
import type { BlueprintModel, DatabaseSpec, EnvGroupSpec, KeyValueSpec } from './model.js';
import {
  assertImmutable,
  deployService,
  placeService,
  wireService,
  type Placed,
  type ServiceSyncDeps,
} from './sync-service.js';

/** What a sync did to one resource of the file (GET /v1/blueprints/:id/syncs). */
export interface SyncResult {
  kind: 'project' | 'envGroup' | 'postgres' | 'keyValue' | 'service';
  name: string;
  id?: string;
  action: 'created' | 'updated' | 'unchanged' | 'skipped' | 'failed';
  error?: string;
  warnings?: string[];
  deployId?: string;
}

export interface SyncDeps extends ServiceSyncDeps {
  /** Finds one resource of the workspace by name (the newest, where names may repeat). */
  find: {
    envGroup(workspaceId: string, name: string): Promise<EnvGroupRow | undefined>;
    datastore(workspaceId: string, kind: 'postgres' | 'keyValue', name: string): Promise<DatastoreRow | undefined>;
    /** The project's environments by name, made if missing. */
    environments(
      workspaceId: string,
      project: string,
      names: string[],
    ): Promise<{ id: string; ids: Map<string, string> }>;
  };
  envGroups: {
    create(
      workspaceId: string,
      input: { name: string; envVars: EnvVarInput[]; environmentId?: string },
    ): Promise<EnvGroupRow>;
    vars(group: EnvGroupRow): Promise<Array<{ key: string; value: string }>>;
    putVar(group: EnvGroupRow, input: EnvVarInput): Promise<unknown>;
  };
  datastores: {
    createPostgres(workspaceId: string, input: Record<string, unknown>): Promise<DatastoreRow>;
    createKeyValue(workspaceId: string, input: Record<string, unknown>): Promise<DatastoreRow>;
    update(row: DatastoreRow, patch: { plan?: string; maxmemoryPolicy?: string }): Promise<unknown>;
    /** Resolves once none of these is still being created (a deploy resolves their references strictly). */
    created(ids: string[]): Promise<void>;
  };
}

/** Deploys the sync starts at once (each stores its source first). */
const DEPLOY_CONCURRENCY = 4;
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
const envKey = (e: { project: string; name: string } | undefined) => (e ? `${e.project}/${e.name}` : undefined);
const environmentOf = (placed: Placed, spec: { environment?: { project: string; name: string } }) =>
  spec.environment ? placed.environments.get(envKey(spec.environment)!) : undefined;

/**
 * Applies the file to the workspace, resource by resource, in the order references need: projects, env groups,
 * datastores, then services (which deploy last). A resource that fails is reported and the rest go on; each result is
 * passed to `record` as soon as it is known, so a sync that dies half-way has recorded what it did.
 */
export async function applyBlueprint(
  deps: SyncDeps,
  ctx: {
    workspaceId: string;
    blueprint: { repo: string | null; branch: string | null; archive?: { file: string; sha256: string } };
  },
  model: BlueprintModel,
  input: { envVars: Record<string, string> },
  record: (result: SyncResult) => Promise<void>,
): Promise<void> {
  const { workspaceId } = ctx;
  const placed: Placed = {
    environments: new Map(),
    groups: new Map(),
    postgres: new Map(),
    keyValue: new Map(),
    services: new Map(),
    changedGroups: new Set(),
  };
  // Results are recorded one at a time, in the order they come, whatever runs at once.
  let recorded = Promise.resolve();
  const report = (result: SyncResult) => (recorded = recorded.then(() => record(result)));
  const attempt = async (
    kind: SyncResult['kind'],
    name: string,
    work: () => Promise<Omit<SyncResult, 'kind' | 'name'>>,
  ) => {
    let result: SyncResult;
    try {
      result = { kind, name, ...(await work()) };
    } catch (err) {
      result = { kind, name, action: 'failed', error: message(err) };
    }
    await report(result);
  };

  for (const project of model.projects)
    await attempt('project', project.name, async () => {
      const { id, ids } = await deps.find.environments(workspaceId, project.name, project.environments);
      for (const [env, envId] of ids) placed.environments.set(`${project.name}/${env}`, envId);
      return { id, action: 'unchanged' };
    });
  for (const group of model.envGroups)
    await attempt('envGroup', group.name, () => applyGroup(deps, workspaceId, group, placed));
  for (const db of model.databases)
    await attempt('postgres', db.name, () => applyPostgres(deps, workspaceId, db, placed));
  for (const kv of model.keyValue)
    await attempt('keyValue', kv.name, () => applyKeyValue(deps, workspaceId, kv, placed));
  // Services in three passes, so a reference may name a service further down the file: place them all, then wire
  // their variables and groups, then deploy. A service that failed a pass sits out the later ones.
  const states = new Map<
    string,
    { service: ServiceRow; action: SyncResult['action']; changed: boolean; warnings: string[] }
  >();
  const failed = new Map<string, string>();
  for (const spec of model.services) {
    if (!spec.type) {
      await report({
        kind: 'service',
        name: spec.name,
        action: 'skipped',
        warnings: [`${spec.renderType} with runtime ${spec.runtime} cannot run here`],
      });
      continue;
    }
    try {
      const sctx = { ...ctx, environmentId: environmentOf(placed, spec) };
      const { service, created, changed } = await placeService(deps, sctx, spec);
      placed.services.set(spec.name, service);
      const warnings = spec.domains ? await deps.addDomains(service, spec.domains) : [];
      if (spec.disk) warnings.push(...(await deps.placeDisk(service, spec.disk)));
      states.set(spec.name, {
        service,
        action: created ? 'created' : changed ? 'updated' : 'unchanged',
        changed,
        warnings,
      });
    } catch (err) {
      failed.set(spec.name, message(err));
    }
  }
  for (const spec of model.services) {
    const state = states.get(spec.name);
    if (!state) continue;
    try {
      if (await wireService(deps, ctx, spec, state.service, placed, input.envVars)) {
        state.changed = true;
        if (state.action === 'unchanged') state.action = 'updated';
      }
    } catch (err) {
      states.delete(spec.name);
      failed.set(spec.name, message(err));
    }
  }
  // Deploys read their datastores' connection details: wait for the ones this sync placed to exist.
  if (states.size)
    await deps.datastores.created([...placed.postgres.values(), ...placed.keyValue.values()].map((d) => d.id));
  const deployOne = async (spec: (typeof model.services)[number]) => {
    const error = failed.get(spec.name);
    if (error !== undefined) {
      const id = placed.services.get(spec.name)?.id;
      return report({ kind: 'service', name: spec.name, id, action: 'failed', error });
    }
    const state = states.get(spec.name);
    if (!state) return;
    await attempt('service', spec.name, async () => {
      const deployId = await deployService(deps, ctx, state.service, state.changed);
      const action = deployId && state.action === 'unchanged' ? 'updated' : state.action;
      const warnings = state.warnings.length ? { warnings: state.warnings } : {};
      return { id: state.service.id, action, ...(deployId ? { deployId } : {}), ...warnings };
    });
  };
  // A few at once: each deploy stores its source and starts building off this path.
  const queue = [...model.services];
  await Promise.all(
    Array.from({ length: DEPLOY_CONCURRENCY }, async () => {
      for (let spec = queue.shift(); spec; spec = queue.shift()) await deployOne(spec);
    }),
  );
}

async function applyGroup(deps: SyncDeps, workspaceId: string, spec: EnvGroupSpec, placed: Placed) {
  const inputs = spec.envVars as EnvVarInput[];
  const existing = await deps.find.envGroup(workspaceId, spec.name);
  if (!existing) {
    const group = await deps.envGroups.create(workspaceId, {
      name: spec.name,
      envVars: inputs,
      environmentId: environmentOf(placed, spec),
    });
    placed.groups.set(spec.name, group);
    return { id: group.id, action: 'created' as const };
  }
  placed.groups.set(spec.name, existing);
  // Variables the file omits are kept; a generated value is made once, when the key is new.
  const current = new Map((await deps.envGroups.vars(existing)).map((v) => [v.key, v.value]));
  let changed = false;
  for (const v of spec.envVars) {
    if ('value' in v ? current.get(v.key) === v.value : current.has(v.key)) continue;
    await deps.envGroups.putVar(existing, v);
    changed = true;
  }
  if (changed) placed.changedGroups.add(existing.id);
  return { id: existing.id, action: changed ? ('updated' as const) : ('unchanged' as const) };
}

/** Render spells eviction policies with dashes in files, with underscores in its API. */
const policy = (p: string | undefined) => p?.replace(/-/g, '_');

async function applyPostgres(deps: SyncDeps, workspaceId: string, spec: DatabaseSpec, placed: Placed) {
  const existing = await deps.find.datastore(workspaceId, 'postgres', spec.name);
  if (!existing) {
    const row = await deps.datastores.createPostgres(workspaceId, {
      name: spec.name,
      plan: spec.plan ?? 'basic_256mb',
      ...(spec.postgresMajorVersion ? { version: String(spec.postgresMajorVersion) } : {}),
      ...(spec.databaseName ? { databaseName: spec.databaseName } : {}),
      ...(spec.user ? { databaseUser: spec.user } : {}),
      environmentId: environmentOf(placed, spec),
    });
    placed.postgres.set(spec.name, row);
    return { id: row.id, action: 'created' as const };
  }
  placed.postgres.set(spec.name, existing);
  assertImmutable(
    [
      ['databaseName', spec.databaseName, existing.databaseName],
      ['user', spec.user, existing.databaseUser],
    ],
    'database',
  );
  if (spec.plan && spec.plan !== existing.plan) {
    await deps.datastores.update(existing, { plan: spec.plan });
    return { id: existing.id, action: 'updated' as const };
  }
  return { id: existing.id, action: 'unchanged' as const };
}

async function applyKeyValue(deps: SyncDeps, workspaceId: string, spec: KeyValueSpec, placed: Placed) {
  const existing = await deps.find.datastore(workspaceId, 'keyValue', spec.name);
  if (!existing) {
    const row = await deps.datastores.createKeyValue(workspaceId, {
      name: spec.name,
      plan: spec.plan ?? 'starter',
      ...(spec.maxmemoryPolicy ? { maxmemoryPolicy: policy(spec.maxmemoryPolicy) } : {}),
      environmentId: environmentOf(placed, spec),
    });
    placed.keyValue.set(spec.name, row);
    return { id: row.id, action: 'created' as const };
  }
  placed.keyValue.set(spec.name, existing);
  const patch: { plan?: string; maxmemoryPolicy?: string } = {};
  if (spec.plan && spec.plan !== existing.plan) patch.plan = spec.plan;
  if (spec.maxmemoryPolicy && policy(spec.maxmemoryPolicy) !== existing.maxmemoryPolicy)
    patch.maxmemoryPolicy = policy(spec.maxmemoryPolicy);
  if (!Object.keys(patch).length) return { id: existing.id, action: 'unchanged' as const };
  await deps.datastores.update(existing, patch);
  return { id: existing.id, action: 'updated' as const };
}
