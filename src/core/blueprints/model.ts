import type { HeaderRule, RouteRule } from '../../model/static-rules.js';
import type { ServiceType } from '../../model/enums.js';
import { normalizePlan } from './spec.js';
import { validateDocument, type Validation } from './validate.js';

/**
 * A validated render.yaml as the sync reads it: Render's deprecated spellings folded into one (`env` → runtime,
 * `type: redis` → key value, `autoDeploy` → autoDeployTrigger), each resource with the project environment it sits in.
 */
export type EnvVarSpec =
  | { key: string; value: string }
  | { key: string; generateValue: true }
  | { key: string; sync: false }
  | { key: string; fromDatabase: { name: string; property: string } }
  | { key: string; fromService: { name: string; type: string; property?: string; envVarKey?: string } };

interface Placed {
  name: string;
  /** `project/environment`, or undefined for ungrouped resources. */
  environment?: { project: string; name: string };
}
export interface ServiceSpec extends Placed {
  /** Slipway's type; undefined for what this Slipway cannot run (Render Workflows): skipped with a warning. */
  type?: ServiceType;
  renderType: string;
  runtime: string;
  plan?: string;
  region?: string;
  repo?: string;
  branch?: string;
  rootDir?: string;
  buildCommand?: string;
  startCommand?: string;
  preDeployCommand?: string;
  healthCheckPath?: string;
  schedule?: string;
  staticPublishPath?: string;
  numInstances?: number;
  maxShutdownDelaySeconds?: number;
  autoDeploy?: 'yes' | 'no';
  /** A static site's rules (Render's `headers` and `routes`). */
  headers?: HeaderRule[];
  routes?: RouteRule[];
  buildFilter?: { paths: string[]; ignoredPaths: string[] };
  /** runtime docker: Render's Dockerfile fields, and the name of the credential its base images are pulled with. */
  docker?: { dockerfilePath?: string; dockerContext?: string; dockerCommand?: string; registryCredential?: string };
  /** runtime image: the image it runs (Render's `image.url`), and the name of the credential it is pulled with. */
  image?: { url: string; registryCredential?: string };
  /** Custom domains to add to the service (Render's `domains`); a sync adds, never removes. */
  domains?: string[];
  /** Its persistent disk (Render's `disk`; `sizeGB` 10 unless given); a sync adds or changes it, never removes it. */
  disk?: { name: string; mountPath: string; sizeGB: number };
  envVars: EnvVarSpec[];
  groups: string[];
}
export interface DatabaseSpec extends Placed {
  plan?: string;
  databaseName?: string;
  user?: string;
  postgresMajorVersion?: number;
  ipAllowList?: Array<{ source: string; description?: string }>;
}
export interface KeyValueSpec extends Placed {
  plan?: string;
  maxmemoryPolicy?: string;
  ipAllowList?: Array<{ source: string; description?: string }>;
}
export interface EnvGroupSpec extends Placed {
  envVars: Array<{ key: string; value: string } | { key: string; generateValue: true }>;
}
export interface BlueprintModel {
  projects: Array<{ name: string; environments: string[] }>;
  services: ServiceSpec[];
  databases: DatabaseSpec[];
  keyValue: KeyValueSpec[];
  envGroups: EnvGroupSpec[];
}

type Obj = Record<string, unknown>;
const str = (v: unknown) => (v === undefined || v === null ? undefined : String(v));
const num = (v: unknown) => (v === undefined || v === null ? undefined : Number(v));

const SERVICE_TYPE: Record<string, ServiceType> = {
  web: 'web_service',
  pserv: 'private_service',
  worker: 'background_worker',
  cron: 'cron_job',
};

function envVarsOf(list: unknown): { vars: EnvVarSpec[]; groups: string[] } {
  const vars: EnvVarSpec[] = [];
  const groups: string[] = [];
  for (const item of (list as Obj[] | undefined) ?? []) {
    if (item.fromGroup !== undefined) groups.push(String(item.fromGroup));
    else if (item.value !== undefined) vars.push({ key: String(item.key), value: String(item.value) });
    else if (item.generateValue !== undefined) vars.push({ key: String(item.key), generateValue: true });
    else if (item.sync !== undefined) vars.push({ key: String(item.key), sync: false });
    else if (item.fromDatabase) {
      const ref = item.fromDatabase as Obj;
      vars.push({ key: String(item.key), fromDatabase: { name: String(ref.name), property: String(ref.property) } });
    } else if (item.fromService) {
      const ref = item.fromService as Obj;
      vars.push({
        key: String(item.key),
        fromService: {
          name: String(ref.name),
          type: String(ref.type),
          property: str(ref.property),
          envVarKey: str(ref.envVarKey),
        },
      });
    }
  }
  return { vars, groups };
}

const headerRule = (h: Obj): HeaderRule => ({ path: String(h.path), name: String(h.name), value: String(h.value) });
const routeRule = (r: Obj): RouteRule => ({
  type: r.type === 'redirect' ? 'redirect' : 'rewrite',
  source: String(r.source),
  destination: String(r.destination),
});

const filterOf = (f: Obj) => ({
  paths: ((f.paths as unknown[] | undefined) ?? []).map(String),
  ignoredPaths: ((f.ignoredPaths as unknown[] | undefined) ?? []).map(String),
});

/** The name in Render's `{fromRegistryCreds: {name}}`. */
const credentialName = (ref: unknown) => str(((ref as Obj | undefined)?.fromRegistryCreds as Obj | undefined)?.name);
const dockerOf = (s: Obj): ServiceSpec['docker'] => ({
  dockerfilePath: str(s.dockerfilePath),
  dockerContext: str(s.dockerContext),
  dockerCommand: str(s.dockerCommand),
  registryCredential: credentialName(s.registryCredential),
});
const imageOf = (image: Obj): ServiceSpec['image'] => ({
  url: String(image.url),
  registryCredential: credentialName(image.creds),
});

function addResources(model: BlueprintModel, set: Obj | undefined, environment: Placed['environment']) {
  for (const s of (set?.services as Obj[] | undefined) ?? []) {
    const renderType = String(s.type);
    if (renderType === 'keyvalue' || renderType === 'redis') {
      model.keyValue.push({
        name: String(s.name),
        environment,
        plan: s.plan === undefined ? undefined : normalizePlan(String(s.plan)),
        maxmemoryPolicy: str(s.maxmemoryPolicy),
        ipAllowList: s.ipAllowList as KeyValueSpec['ipAllowList'],
      });
      continue;
    }
    const runtime = String(s.runtime ?? s.env);
    const type =
      renderType === 'workflow' ? undefined : runtime === 'static' ? 'static_site' : SERVICE_TYPE[renderType];
    const trigger = str(s.autoDeployTrigger);
    const autoDeploy =
      trigger !== undefined
        ? trigger === 'off'
          ? 'no'
          : 'yes'
        : s.autoDeploy !== undefined
          ? s.autoDeploy === false
            ? 'no'
            : 'yes'
          : undefined;
    const { vars, groups } = envVarsOf(s.envVars);
    model.services.push({
      name: String(s.name),
      environment,
      type,
      renderType,
      runtime,
      plan: s.plan === undefined ? undefined : normalizePlan(String(s.plan)),
      region: str(s.region),
      repo: str(s.repo),
      branch: str(s.branch),
      rootDir: str(s.rootDir),
      buildCommand: str(s.buildCommand),
      startCommand: str(s.startCommand),
      preDeployCommand: str(s.preDeployCommand),
      healthCheckPath: str(s.healthCheckPath),
      schedule: str(s.schedule),
      staticPublishPath: str(s.staticPublishPath),
      numInstances: num(s.numInstances),
      maxShutdownDelaySeconds: num(s.maxShutdownDelaySeconds),
      autoDeploy,
      ...(type === 'static_site' && s.headers ? { headers: (s.headers as Obj[]).map(headerRule) } : {}),
      ...(type === 'static_site' && s.routes ? { routes: (s.routes as Obj[]).map(routeRule) } : {}),
      ...(s.buildFilter ? { buildFilter: filterOf(s.buildFilter as Obj) } : {}),
      ...(runtime === 'docker' ? { docker: dockerOf(s) } : {}),
      ...(runtime === 'image' ? { image: imageOf(s.image as Obj) } : {}),
      ...(Array.isArray(s.domains) && s.domains.length ? { domains: (s.domains as unknown[]).map(String) } : {}),
      ...(s.disk ? { disk: diskOf(s.disk as Obj) } : {}),
      envVars: vars,
      groups,
    });
  }
  for (const d of (set?.databases as Obj[] | undefined) ?? [])
    model.databases.push({
      name: String(d.name),
      environment,
      plan: d.plan === undefined ? undefined : normalizePlan(String(d.plan)),
      databaseName: str(d.databaseName),
      user: str(d.user),
      postgresMajorVersion: num(d.postgresMajorVersion),
      ipAllowList: d.ipAllowList as DatabaseSpec['ipAllowList'],
    });
  for (const g of (set?.envVarGroups as Obj[] | undefined) ?? [])
    model.envGroups.push({
      name: String(g.name),
      environment,
      envVars: envVarsOf(g.envVars).vars as EnvGroupSpec['envVars'],
    });
}

/** What one sync may make: a 10 MB file could otherwise ask for tens of thousands of services in one request. */
export const MAX_RESOURCES = 200;
/** The API's own cap on one owner's variables (http/schemas/services.ts EnvVarInputArray). */
export const MAX_ENV_VARS = 500;

/** Why the model is more than one sync may apply, or undefined. */
export function overLimits(model: BlueprintModel): string | undefined {
  const count =
    model.projects.length +
    model.services.length +
    model.databases.length +
    model.keyValue.length +
    model.envGroups.length;
  if (count > MAX_RESOURCES)
    return `the file names ${count} resources; one blueprint manages at most ${MAX_RESOURCES} here`;
  const crowded = [...model.services, ...model.envGroups].find((r) => r.envVars.length > MAX_ENV_VARS);
  if (crowded) return `${crowded.name} has ${crowded.envVars.length} env vars; at most ${MAX_ENV_VARS}`;
  return undefined;
}

/** Validates the file and, when it is valid, reads it into the model (the validation already checked every shape). */
export function readBlueprint(text: string): { validation: Validation; model?: BlueprintModel } {
  const { validation, doc } = validateDocument(text);
  if (!validation.valid) return { validation };
  // toJS resolves aliases with the same cap parse() has (an alias bomb is an error, not a hang).
  const root = doc.toJS({ maxAliasCount: 100 }) as Obj;
  const model: BlueprintModel = { projects: [], services: [], databases: [], keyValue: [], envGroups: [] };
  addResources(model, root, undefined);
  addResources(model, root.ungrouped as Obj | undefined, undefined);
  for (const p of (root.projects as Obj[] | undefined) ?? []) {
    const envs = (p.environments as Obj[] | undefined) ?? [];
    model.projects.push({ name: String(p.name), environments: envs.map((e) => String(e.name)) });
    for (const e of envs) addResources(model, e, { project: String(p.name), name: String(e.name) });
  }
  return { validation, model };
}

/** Render's `disk`: `sizeGB` defaults to 10 in a blueprint (the API's default is 1). */
const diskOf = (d: Obj) => ({
  name: String(d.name),
  mountPath: String(d.mountPath),
  sizeGB: typeof d.sizeGB === 'number' ? d.sizeGB : 10,
});
