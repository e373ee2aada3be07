import type { ServiceDetailsInput } from '../../model/services.js';
import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { EnvGroupRow } from '../../store/repos/env-groups.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { EnvVarInput } from '../services/env-vars.js';
import type { ServiceInput, ServicePatch } from '../services/services.js';
import type { EnvVarSpec, ServiceSpec } from './model.js';

/** The port every instance listens on in its own namespace (Render's default), what `fromService` `port` names. */
export const SERVICE_PORT = 10000;

/**
 * Where this sync put each resource of the file, by kind and name (what references in the file resolve to): filled by
 * sync.ts in its order, read here by the service steps.
 */
export interface Placed {
  environments: Map<string, string>;
  groups: Map<string, EnvGroupRow>;
  postgres: Map<string, DatastoreRow>;
  keyValue: Map<string, DatastoreRow>;
  services: Map<string, ServiceRow>;
  /** Env groups whose variables this sync changed: their services deploy. */
  changedGroups: Set<string>;
}

type OpenedVar = { key: string; value: string; fromDatabase?: { id: string }; fromKeyValue?: { id: string } };
export interface ServiceSyncDeps {
  findService(workspaceId: string, name: string): Promise<ServiceRow | undefined>;
  services: {
    create(workspaceId: string, input: ServiceInput): Promise<ServiceRow>;
    update(service: ServiceRow, patch: ServicePatch): Promise<ServiceRow>;
  };
  serviceVars: {
    list(serviceId: string): Promise<OpenedVar[]>;
    put(owner: ServiceRow, input: EnvVarInput): Promise<unknown>;
  };
  groupsOf(serviceId: string): Promise<EnvGroupRow[]>;
  link(group: EnvGroupRow, serviceId: string): Promise<unknown>;
  /** Whether the service ever had a deploy (a sync that died before deploying carries on there). */
  hasDeploys(service: ServiceRow): Promise<boolean>;
  /** The SHA-256 of the service's newest uploaded source. */
  latestSourceSha(serviceId: string): Promise<string | undefined>;
  /** The id of the workspace's registry credential of that name (a file names credentials; the API takes ids). */
  registryCredentialId(workspaceId: string, name: string): Promise<string | undefined>;
  /** Adds the custom domains the service lacks; what could not be added (taken, invalid) comes back as warnings. */
  addDomains(service: ServiceRow, names: string[]): Promise<string[]>;
  /** Gives the service the file's disk (made, or changed to it); what could not be done comes back as warnings. */
  placeDisk(service: ServiceRow, disk: NonNullable<ServiceSpec['disk']>): Promise<string[]>;
  /** Deploys: the blueprint's archive as the service's new source, or a build of its repo (or its current source). */
  deploy(service: ServiceRow, archive?: { file: string; sha256: string }): Promise<string>;
}

export interface BlueprintCtx {
  workspaceId: string;
  environmentId?: string;
  blueprint: { repo: string | null; branch: string | null; archive?: { file: string; sha256: string } };
}

/** Render's immutable fields: one the file changed is this resource's error, never a silent change. */
export function assertImmutable(fields: Array<[string, string | undefined, string | null]>, what: string) {
  for (const [field, want, have] of fields)
    if (want !== undefined && want !== have)
      throw new Error(`${field} cannot change (it is "${have}", the file says "${want}"): create a new ${what}`);
}

/** What the file sets of a service's details (a field the file omits is left as it is). */
function detailsOf(spec: ServiceSpec): ServiceDetailsInput & { startCommand?: string } {
  const d: ServiceDetailsInput & { startCommand?: string } = {};
  const set = <K extends keyof typeof d>(key: K, value: (typeof d)[K] | undefined) => {
    if (value !== undefined) d[key] = value;
  };
  set('plan', spec.plan);
  set('numInstances', spec.numInstances);
  set('healthCheckPath', spec.healthCheckPath);
  set('buildCommand', spec.buildCommand);
  set('startCommand', spec.startCommand);
  set('preDeployCommand', spec.preDeployCommand);
  set('maxShutdownDelaySeconds', spec.maxShutdownDelaySeconds);
  set('schedule', spec.schedule);
  set('publishPath', spec.staticPublishPath?.replace(/^\.?\/+/, '') || undefined);
  return d;
}

/**
 * Rules the file gives, merged into the ones there (Render's rule: the ones the file omits are kept). A header rule is
 * known by its path and name, a route rule by its type and source; the file's value wins, new ones go last.
 */
function mergeRules<T>(current: T[] | undefined, wanted: T[] | undefined, key: (r: T) => string): T[] | undefined {
  if (!wanted) return undefined;
  // Only the rules whose key the file names are replaced; every other one is kept, including several sharing a key
  // (the API accepts two `Link` headers on one path), which a map by key folded into one. A named rule takes its place (a route's place is its priority); the others sharing its key go; new ones go last.
  const named = new Map(wanted.map((r) => [key(r), r]));
  const placed = new Set<string>();
  const out: T[] = [];
  for (const r of current ?? []) {
    const k = key(r);
    if (!named.has(k)) out.push(r);
    else if (!placed.has(k)) {
      out.push(named.get(k)!);
      placed.add(k);
    }
  }
  for (const [k, r] of named) if (!placed.has(k)) out.push(r);
  return out;
}
const canonFilter = (f: { paths: string[]; ignoredPaths: string[] } | undefined) =>
  f && { paths: f.paths, ignoredPaths: f.ignoredPaths };

/** Rules compared field by field (jsonb keeps no key order). */
const sameRules = <T extends object>(a: T[] | undefined, b: T[] | undefined) => {
  const canon = (rules: T[] | undefined) =>
    JSON.stringify((rules ?? []).map((r) => Object.entries(r).sort(([x], [y]) => x.localeCompare(y))));
  return canon(a) === canon(b);
};

type DockerInput = Pick<
  NonNullable<ServiceDetailsInput['envSpecificDetails']>,
  'dockerfilePath' | 'dockerContext' | 'dockerCommand' | 'registryCredentialId'
>;
type ImageInput = NonNullable<ServiceDetailsInput['image']>;

const toInput = (
  { startCommand, ...rest }: ReturnType<typeof detailsOf>,
  docker: DockerInput = {},
): ServiceDetailsInput => {
  const env = { ...(startCommand !== undefined ? { startCommand } : {}), ...docker };
  return { ...rest, ...(Object.keys(env).length ? { envSpecificDetails: env } : {}) };
};

const defined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/** The id of the credential the file names; a name the workspace has no credential of is this resource's error. */
async function credentialId(deps: ServiceSyncDeps, workspaceId: string, name: string | undefined, field: string) {
  if (name === undefined) return undefined;
  const id = await deps.registryCredentialId(workspaceId, name);
  if (!id)
    throw new Error(
      `${field}: this workspace has no registry credential named "${name}" (create it with POST /v1/registrycredentials)`,
    );
  return id;
}

/** What the file sets of a docker or image service's container settings, as the API takes them. */
async function containerOf(
  deps: ServiceSyncDeps,
  workspaceId: string,
  spec: ServiceSpec,
): Promise<{ docker?: DockerInput; image?: ImageInput }> {
  if (spec.docker) {
    const { registryCredential, ...paths } = spec.docker;
    const id = await credentialId(deps, workspaceId, registryCredential, 'registryCredential.fromRegistryCreds.name');
    return { docker: defined({ ...paths, registryCredentialId: id }) };
  }
  if (spec.image) {
    const { url, registryCredential } = spec.image;
    const id = await credentialId(deps, workspaceId, registryCredential, 'image.creds.fromRegistryCreds.name');
    return { image: defined({ imagePath: url, registryCredentialId: id }) };
  }
  return {};
}

/** The fields of `wanted` that differ from `have`. */
const differing = <T extends object>(wanted: T | undefined, have: Partial<T> | undefined): Partial<T> =>
  Object.fromEntries(Object.entries(wanted ?? {}).filter(([k, v]) => have?.[k as keyof T] !== v)) as Partial<T>;

/**
 * Creates the service, or adopts the one of that name and puts back what the file sets. Immutable fields (type,
 * runtime, region) that differ are this resource's error. Returns the row and whether anything changed.
 */
export async function placeService(
  deps: ServiceSyncDeps,
  ctx: BlueprintCtx,
  spec: ServiceSpec,
): Promise<{ service: ServiceRow; created: boolean; changed: boolean }> {
  // An image service runs what it pulls: no repo, not the blueprint's either.
  const pulled = spec.runtime === 'image';
  const repo = pulled ? undefined : (spec.repo ?? ctx.blueprint.repo ?? undefined);
  const branch = pulled ? undefined : (spec.branch ?? (spec.repo ? undefined : (ctx.blueprint.branch ?? undefined)));
  const wanted = detailsOf(spec);
  const container = await containerOf(deps, ctx.workspaceId, spec);
  const existing = await deps.findService(ctx.workspaceId, spec.name);
  if (!existing) {
    const service = await deps.services.create(ctx.workspaceId, {
      type: spec.type!,
      name: spec.name,
      repo,
      branch,
      rootDir: spec.rootDir,
      autoDeploy: spec.autoDeploy,
      buildFilter: spec.buildFilter,
      environmentId: ctx.environmentId,
      ...(container.image ? { image: container.image } : {}),
      serviceDetails: {
        ...toInput(wanted, container.docker),
        ...(spec.headers ? { headers: spec.headers } : {}),
        ...(spec.routes ? { routes: spec.routes } : {}),
        runtime: spec.type === 'static_site' ? 'node' : spec.runtime,
        region: spec.region,
      },
    });
    return { service, created: true, changed: true };
  }
  assertImmutable(
    [
      ['type', spec.type, existing.type],
      ['runtime', spec.type === 'static_site' ? undefined : spec.runtime, existing.details.runtime],
      ['region', spec.region, existing.details.region],
    ],
    'service',
  );
  const details: Partial<ReturnType<typeof detailsOf>> = {};
  for (const [key, value] of Object.entries(wanted) as Array<[keyof typeof wanted, never]>)
    if (existing.details[key as keyof ServiceRow['details']] !== value) details[key] = value;
  const patch: ServicePatch = {};
  if (repo !== undefined && repo !== existing.repo) patch.repo = repo;
  if (branch !== undefined && branch !== existing.branch) patch.branch = branch;
  if (spec.rootDir !== undefined && spec.rootDir.replace(/\/+$/, '') !== existing.rootDir) patch.rootDir = spec.rootDir;
  if (spec.autoDeploy !== undefined && spec.autoDeploy !== existing.autoDeploy) patch.autoDeploy = spec.autoDeploy;
  // Replaced whole, as Render does: the file's paths are the filter, whatever was there.
  if (
    spec.buildFilter &&
    JSON.stringify(spec.buildFilter) !== JSON.stringify(canonFilter(existing.details.buildFilter))
  )
    patch.buildFilter = spec.buildFilter;
  const rules = {
    headers: mergeRules(existing.details.headers, spec.headers, (h) => `${h.path}\n${h.name.toLowerCase()}`),
    routes: mergeRules(existing.details.routes, spec.routes, (r) => `${r.type}\n${r.source}`),
  };
  const docker = differing(container.docker, existing.details.docker);
  const input: ServiceDetailsInput =
    Object.keys(details).length || Object.keys(docker).length ? toInput(details, docker) : {};
  // The image is replaced whole: a credential the file does not name is kept.
  if (container.image && Object.keys(differing(container.image, existing.details.image)).length)
    patch.image = { ...existing.details.image, ...container.image };
  if (rules.headers && !sameRules(rules.headers, existing.details.headers)) input.headers = rules.headers;
  if (rules.routes && !sameRules(rules.routes, existing.details.routes)) input.routes = rules.routes;
  if (Object.keys(input).length) patch.serviceDetails = input;
  if (!Object.keys(patch).length) return { service: existing, created: false, changed: false };
  return { service: await deps.services.update(existing, patch), created: false, changed: true };
}

/** One variable of the file as the API takes it, or undefined when the one there already is what the file asks. */
async function wantedVar(
  deps: ServiceSyncDeps,
  ctx: BlueprintCtx,
  v: EnvVarSpec,
  current: OpenedVar | undefined,
  placed: Placed,
  given: Record<string, string>,
): Promise<EnvVarInput | undefined> {
  if ('value' in v) return current?.value === v.value && !current.fromDatabase && !current.fromKeyValue ? undefined : v;
  if ('generateValue' in v) return current ? undefined : v;
  if ('sync' in v) {
    const value = given[v.key];
    if (value === undefined) {
      if (current) return undefined;
      throw new Error(
        `${v.key} is "sync: false" in the file: pass its value in the sync's envVars ({"${v.key}": "…"})`,
      );
    }
    return current?.value === value ? undefined : { key: v.key, value };
  }
  if ('fromDatabase' in v) {
    const db = placed.postgres.get(v.fromDatabase.name);
    if (!db) throw new Error(`${v.key}: no database "${v.fromDatabase.name}" in this sync`);
    const property = v.fromDatabase.property as 'connectionString';
    return current?.fromDatabase?.id === db.id && (current.fromDatabase as { property?: string }).property === property
      ? undefined
      : { key: v.key, fromDatabase: { id: db.id, property } };
  }
  const ref = v.fromService;
  if (ref.type === 'keyvalue' || ref.type === 'redis') {
    const kv = placed.keyValue.get(ref.name);
    if (!kv) throw new Error(`${v.key}: no key value "${ref.name}" in this sync`);
    if (!ref.property) throw new Error(`${v.key}: from a key value, take connectionString, host, port or hostport`);
    const property = ref.property as 'connectionString';
    return current?.fromKeyValue?.id === kv.id && (current.fromKeyValue as { property?: string }).property === property
      ? undefined
      : { key: v.key, fromKeyValue: { id: kv.id, property } };
  }
  const other = placed.services.get(ref.name) ?? (await deps.findService(ctx.workspaceId, ref.name));
  if (!other) throw new Error(`${v.key}: no service "${ref.name}" in this workspace`);
  let value: string;
  if (ref.envVarKey) {
    const found = (await deps.serviceVars.list(other.id)).find((o) => o.key === ref.envVarKey);
    if (!found) throw new Error(`${v.key}: service "${ref.name}" has no env var ${ref.envVarKey}`);
    value = found.value;
  } else if (ref.property === 'host') value = other.slug;
  else if (ref.property === 'port') value = String(SERVICE_PORT);
  else if (ref.property === 'hostport') value = `${other.slug}:${SERVICE_PORT}`;
  else throw new Error(`${v.key}: a service gives host, port or hostport, not ${ref.property}`);
  return current?.value === value ? undefined : { key: v.key, value };
}

/** Sets the variables and env group links the file gives (the ones it omits are kept). Returns whether any changed. */
export async function wireService(
  deps: ServiceSyncDeps,
  ctx: BlueprintCtx,
  spec: ServiceSpec,
  service: ServiceRow,
  placed: Placed,
  given: Record<string, string>,
): Promise<boolean> {
  const current = new Map((await deps.serviceVars.list(service.id)).map((v) => [v.key, v]));
  const puts: EnvVarInput[] = [];
  for (const v of spec.envVars) {
    const input = await wantedVar(deps, ctx, v, current.get(v.key), placed, given);
    if (input) puts.push(input);
  }
  for (const input of puts) await deps.serviceVars.put(service, input);
  const linked = new Set((await deps.groupsOf(service.id)).map((g) => g.id));
  let links = 0;
  for (const name of spec.groups) {
    const group = placed.groups.get(name);
    if (!group) throw new Error(`fromGroup: no env group "${name}" in this sync`);
    if (linked.has(group.id)) continue;
    await deps.link(group, service.id);
    linked.add(group.id);
    links++;
  }
  const groupChanged = [...linked].some((id) => placed.changedGroups.has(id));
  return puts.length > 0 || links > 0 || groupChanged;
}

/**
 * Deploys what the sync created or changed, and what never deployed. A service of an uploaded blueprint without a repo
 * takes the archive as its source when it is not already its newest one; an image service pulls its image.
 */
export async function deployService(
  deps: ServiceSyncDeps,
  ctx: BlueprintCtx,
  service: ServiceRow,
  changed: boolean,
): Promise<string | undefined> {
  const pulled = service.details.runtime === 'image';
  const archive = !service.repo && !pulled ? ctx.blueprint.archive : undefined;
  if (archive && (await deps.latestSourceSha(service.id)) !== archive.sha256) return deps.deploy(service, archive);
  if (!service.repo && !archive && !pulled) return undefined;
  if (changed || !(await deps.hasDeploys(service))) return deps.deploy(service);
  return undefined;
}
