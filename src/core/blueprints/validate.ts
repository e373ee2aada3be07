import { isMap, isScalar, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import * as spec from './spec.js';
import { createWalk, type BlueprintError, type BlueprintWarning, type Finding, type Walk } from './yaml-walk.js';

/** The resources a sync would create or adopt, by name, and what of the file this Slipway would not do. */
export interface BlueprintPlan {
  services: string[];
  databases: string[];
  keyValue: string[];
  envGroups: string[];
  warnings: BlueprintWarning[];
}
export interface Validation {
  valid: boolean;
  errors: BlueprintError[];
  plan: BlueprintPlan;
  /** The runtime versions the file asks for (NODE_VERSION and the like), which version-warnings.ts checks. Not sent. */
  versions: VersionAsked[];
}

/** A version variable's value, where it is, and the runtime of the service it is set on (none for an env group). */
export type VersionAsked = Finding & { resource: string; runtime?: string; key: string; value: string };
/** The variables that pick a runtime's version on Render. */
const VERSION_KEYS = new Set(['NODE_VERSION', 'PYTHON_VERSION', 'ELIXIR_VERSION', 'ERLANG_VERSION']);

type Entries = Map<string, Node | null>;
const get = (m: Entries | undefined, key: string) => m?.get(key);

/** Render's validation of a render.yaml (POST /v1/blueprints/validate): every error with its line, and the plan. */
export const validateBlueprint = (text: string): Validation => validateDocument(text).validation;

/** The validation and the parsed document (readBlueprint builds the model from it: the text is parsed once). */
export function validateDocument(text: string): { validation: Validation; doc: Document.Parsed } {
  const lines = new LineCounter();
  // YAML 1.2 (the `yaml` package's default), as Render reads the files: an unquoted `off` is the string "off"; with
  // merge keys (`<<: *base`), which real files use to share a service's settings.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: false, merge: true });
  return { validation: check(doc, lines), doc };
}

function check(doc: Document.Parsed, lines: LineCounter): Validation {
  const w = createWalk(lines, doc);
  const plan: BlueprintPlan = { services: [], databases: [], keyValue: [], envGroups: [], warnings: w.warnings };
  const versions: VersionAsked[] = [];
  const fail = (): Validation => ({ valid: false, errors: w.errors, plan, versions: [] });
  if (doc.errors.length > 0) {
    for (const e of doc.errors) {
      const pos = e.linePos?.[0];
      w.errors.push({
        path: '',
        error: `invalid YAML: ${e.message.split('\n')[0]}`,
        line: pos?.line,
        column: pos?.col,
      });
    }
    return fail();
  }
  const root = doc.contents as Node | null;
  if (!isMap(root)) {
    w.error('', root, 'the file must be a mapping with services, databases and envVarGroups (see render.yaml docs)');
    return fail();
  }
  const top = w.map(root, '', spec.TOP_KEYS);
  const names = { service: new Set<string>(), database: new Set<string>(), group: new Set<string>() };
  const resources = (m: Entries | undefined, path: string) => {
    if (get(m, 'services'))
      w.list(get(m, 'services'), `${path}services`, (n, p) => service(w, n, p, plan, names, versions));
    if (get(m, 'databases')) w.list(get(m, 'databases'), `${path}databases`, (n, p) => database(w, n, p, plan, names));
    if (get(m, 'envVarGroups'))
      w.list(get(m, 'envVarGroups'), `${path}envVarGroups`, (n, p) => envGroup(w, n, p, plan, names, versions));
  };
  resources(top, '');
  if (get(top, 'ungrouped'))
    resources(w.map(get(top, 'ungrouped'), 'ungrouped', spec.NESTED.ungrouped!.keys), 'ungrouped.');
  if (get(top, 'projects'))
    w.list(get(top, 'projects'), 'projects', (n, p) => {
      const project = w.map(n, p, spec.NESTED.project!.keys, spec.NESTED.project!.required);
      if (get(project, 'name')) w.str(get(project, 'name'), `${p}.name`);
      if (get(project, 'environments'))
        w.list(get(project, 'environments'), `${p}.environments`, (en, ep) => {
          const env = w.map(en, ep, spec.NESTED.environment!.keys, spec.NESTED.environment!.required);
          if (get(env, 'name')) w.str(get(env, 'name'), `${ep}.name`);
          resources(env, `${ep}.`);
        });
    });
  if (get(top, 'previews')) {
    const previews = w.map(get(top, 'previews'), 'previews', spec.NESTED.topPreviews!.keys);
    if (get(previews, 'generation'))
      w.oneOf(get(previews, 'generation'), 'previews.generation', spec.PREVIEW_GENERATIONS);
    if (get(previews, 'expireAfterDays')) w.int(get(previews, 'expireAfterDays'), 'previews.expireAfterDays', 1);
  }
  if (get(top, 'previewsEnabled')) w.bool(get(top, 'previewsEnabled'), 'previewsEnabled');
  if (get(top, 'previewsExpireAfterDays')) w.int(get(top, 'previewsExpireAfterDays'), 'previewsExpireAfterDays', 1);
  if (get(top, 'version') && w.str(get(top, 'version'), 'version', true) !== '1')
    w.error('version', get(top, 'version'), 'version must be "1"');
  plan.warnings = w.warningsNamed();
  return w.errors.length === 0 ? { valid: true, errors: w.errors, plan, versions } : fail();
}

/** A resource's name, unique among its kind in the file. */
function nameOf(w: Walk, m: Entries | undefined, path: string, seen: Set<string>, what: string) {
  const node = get(m, 'name');
  const name = node ? w.str(node, `${path}.name`, true) : undefined;
  if (name === undefined) return undefined;
  if (seen.has(name)) w.error(`${path}.name`, node, `another ${what} is named "${name}" in this file`);
  seen.add(name);
  return name;
}

function service(
  w: Walk,
  node: Node | null,
  path: string,
  plan: BlueprintPlan,
  names: { service: Set<string> },
  versions: VersionAsked[],
) {
  const m = w.map(node, path, spec.SERVICE_KEYS, ['name', 'type']);
  if (!m) return;
  const name = nameOf(w, m, path, names.service, 'service') ?? path;
  const type = get(m, 'type') ? w.oneOf(get(m, 'type'), `${path}.type`, spec.SERVICE_TYPES) : undefined;
  const keyValue = type === 'keyvalue' || type === 'redis';
  const runtimeNode = get(m, 'runtime') ?? get(m, 'env');
  const runtimePath = `${path}.${get(m, 'runtime') ? 'runtime' : 'env'}`;
  const runtime = runtimeNode ? w.oneOf(runtimeNode, runtimePath, spec.RUNTIMES) : undefined;
  if (type && !keyValue && !runtimeNode) w.error(`${path}.runtime`, node, 'runtime is required');
  if (get(m, 'runtime') && get(m, 'env') && runtime && w.str(get(m, 'env'), `${path}.env`, true) !== runtime)
    w.error(`${path}.env`, get(m, 'env'), 'env is the old name of runtime: give one of them');
  if (get(m, 'plan'))
    w.oneOf(get(m, 'plan'), `${path}.plan`, keyValue ? spec.KEY_VALUE_PLANS : spec.SERVICE_PLANS, spec.normalizePlan);
  if (get(m, 'previewPlan'))
    w.oneOf(get(m, 'previewPlan'), `${path}.previewPlan`, spec.KEY_VALUE_PLANS, spec.normalizePlan);
  if (get(m, 'region')) w.oneOf(get(m, 'region'), `${path}.region`, spec.REGIONS);
  for (const key of spec.SERVICE_STRING_KEYS) if (get(m, key)) w.str(get(m, key), `${path}.${key}`);
  if (type === 'cron' && !get(m, 'schedule')) w.error(`${path}.schedule`, node, 'a cron job needs a schedule');
  if (runtime === 'static' && !get(m, 'staticPublishPath'))
    w.error(`${path}.staticPublishPath`, node, 'a static site needs staticPublishPath');
  if (runtime === 'image' && !get(m, 'image')) w.error(`${path}.image`, node, 'an image service needs image.url');
  if (get(m, 'autoDeployTrigger'))
    w.oneOf(get(m, 'autoDeployTrigger'), `${path}.autoDeployTrigger`, spec.AUTO_DEPLOY_TRIGGERS);
  if (get(m, 'autoDeploy')) w.bool(get(m, 'autoDeploy'), `${path}.autoDeploy`);
  if (get(m, 'pullRequestPreviewsEnabled'))
    w.bool(get(m, 'pullRequestPreviewsEnabled'), `${path}.pullRequestPreviewsEnabled`);
  if (get(m, 'numInstances')) w.int(get(m, 'numInstances'), `${path}.numInstances`, 1);
  if (get(m, 'maxShutdownDelaySeconds'))
    w.int(get(m, 'maxShutdownDelaySeconds'), `${path}.maxShutdownDelaySeconds`, 1, 300);
  if (get(m, 'maxmemoryPolicy')) w.oneOf(get(m, 'maxmemoryPolicy'), `${path}.maxmemoryPolicy`, spec.MAXMEMORY_POLICIES);
  if (get(m, 'domains')) w.list(get(m, 'domains'), `${path}.domains`, (n, p) => w.str(n, p));
  nested(w, m, path, 'scaling', 'scaling');
  nested(w, m, path, 'disk', 'disk');
  if (get(m, 'image')) {
    const image = w.map(get(m, 'image'), `${path}.image`, spec.NESTED.image!.keys, spec.NESTED.image!.required);
    if (get(image, 'url')) w.str(get(image, 'url'), `${path}.image.url`);
    if (get(image, 'creds')) registryCreds(w, get(image, 'creds'), `${path}.image.creds`);
  }
  if (get(m, 'registryCredential')) registryCreds(w, get(m, 'registryCredential'), `${path}.registryCredential`);
  nested(w, m, path, 'previews', 'servicePreviews');
  if (get(m, 'buildFilter')) {
    const filter = w.map(get(m, 'buildFilter'), `${path}.buildFilter`, spec.NESTED.buildFilter!.keys);
    for (const key of ['paths', 'ignoredPaths'])
      if (get(filter, key)) w.list(get(filter, key), `${path}.buildFilter.${key}`, (n, p) => w.str(n, p));
  }
  for (const key of ['ipAllowList', 'headers', 'routes'])
    if (get(m, key))
      w.list(get(m, key), `${path}.${key}`, (n, p) => {
        const rule = w.map(n, p, spec.NESTED[key]!.keys, spec.NESTED[key]!.required);
        if (key === 'routes' && get(rule, 'type')) w.oneOf(get(rule, 'type'), `${p}.type`, ['redirect', 'rewrite']);
        const [type, to] = [get(rule, 'type'), get(rule, 'destination')];
        const text = (n: Node | null | undefined) => String(isScalar(n) ? n.value : '');
        if (key === 'routes' && text(type) === 'rewrite' && /^https?:/i.test(text(to)))
          w.warn(`${p}.destination`, to, name, 'a rewrite to another site (a proxy) is not supported here: ignored');
      });
  for (const key of ['headers', 'routes'])
    if (get(m, key) && runtime !== 'static')
      w.warn(`${path}.${key}`, get(m, key), name, `${key} rules apply to static sites only: ignored`);
  const asked = (key: string, value: string, at: Finding) =>
    versions.push({ ...at, resource: name, runtime: runtime === 'static' ? 'node' : runtime, key, value });
  if (get(m, 'envVars')) w.list(get(m, 'envVars'), `${path}.envVars`, (n, p) => envVar(w, n, p, false, asked));

  (keyValue ? plan.keyValue : plan.services).push(name);
  if (type === 'workflow') w.warn(`${path}.type`, get(m, 'type'), name, 'Render Workflows are not supported here');
  if (runtime && !keyValue)
    for (const [key, only] of Object.entries(spec.RUNTIME_ONLY_KEYS))
      if (get(m, key) && runtime !== only)
        w.warn(`${path}.${key}`, get(m, key), name, `${key} is read for runtime ${only} only: ignored`);
  for (const [key, why] of Object.entries(spec.UNSUPPORTED_SERVICE_KEYS))
    if (get(m, key)) w.warn(`${path}.${key}`, get(m, key), name, why);
}

/** A docker service's `registryCredential` or an image's `creds`: a credential of the workspace by name. */
function registryCreds(w: Walk, node: Node | null | undefined, path: string) {
  const { keys, required } = spec.NESTED.registryCredential!;
  const from = get(w.map(node, path, keys, required), 'fromRegistryCreds');
  if (!from) return;
  const named = spec.NESTED.fromRegistryCreds!;
  const ref = w.map(from, `${path}.fromRegistryCreds`, named.keys, named.required);
  if (get(ref, 'name')) w.str(get(ref, 'name'), `${path}.fromRegistryCreds.name`);
}

/** A nested object of a service or database: its keys and required ones (values are checked loosely). */
function nested(w: Walk, m: Entries, path: string, key: string, kind: string) {
  if (get(m, key)) w.map(get(m, key), `${path}.${key}`, spec.NESTED[kind]!.keys, spec.NESTED[kind]!.required);
}

function database(w: Walk, node: Node | null, path: string, plan: BlueprintPlan, names: { database: Set<string> }) {
  const m = w.map(node, path, spec.DATABASE_KEYS, ['name']);
  if (!m) return;
  const name = nameOf(w, m, path, names.database, 'database') ?? path;
  for (const key of ['plan', 'previewPlan'])
    if (get(m, key)) w.oneOf(get(m, key), `${path}.${key}`, spec.DATABASE_PLANS, spec.normalizePlan);
  if (get(m, 'region')) w.oneOf(get(m, 'region'), `${path}.region`, spec.REGIONS);
  for (const key of ['diskSizeGB', 'previewDiskSizeGB']) if (get(m, key)) w.int(get(m, key), `${path}.${key}`, 1);
  if (get(m, 'postgresMajorVersion')) w.int(get(m, 'postgresMajorVersion'), `${path}.postgresMajorVersion`, 11, 99);
  for (const key of ['databaseName', 'user']) if (get(m, key)) w.str(get(m, key), `${path}.${key}`);
  if (get(m, 'ipAllowList'))
    w.list(get(m, 'ipAllowList'), `${path}.ipAllowList`, (n, p) =>
      w.map(n, p, spec.NESTED.ipAllowList!.keys, spec.NESTED.ipAllowList!.required),
    );
  if (get(m, 'readReplicas')) {
    w.list(get(m, 'readReplicas'), `${path}.readReplicas`, (n, p) => w.map(n, p, ['name'], ['name']));
    w.warn(`${path}.readReplicas`, get(m, 'readReplicas'), name, 'read replicas are not supported here');
  }
  nested(w, m, path, 'highAvailability', 'highAvailability');
  if (get(m, 'highAvailability'))
    w.warn(`${path}.highAvailability`, get(m, 'highAvailability'), name, 'high availability is not supported here');
  plan.databases.push(name);
}

function envGroup(
  w: Walk,
  node: Node | null,
  path: string,
  plan: BlueprintPlan,
  names: { group: Set<string> },
  versions: VersionAsked[],
) {
  const m = w.map(node, path, spec.NESTED.envVarGroup!.keys, spec.NESTED.envVarGroup!.required);
  if (!m) return;
  const name = nameOf(w, m, path, names.group, 'env group') ?? path;
  const asked = (key: string, value: string, at: Finding) => versions.push({ ...at, resource: name, key, value });
  if (get(m, 'envVars')) w.list(get(m, 'envVars'), `${path}.envVars`, (n, p) => envVar(w, n, p, true, asked));
  plan.envGroups.push(name);
}

/**
 * One of value, generateValue, sync: false, fromDatabase, fromService, or a bare fromGroup (services only). A version
 * variable's value goes to `asked`.
 */
function envVar(
  w: Walk,
  node: Node | null,
  path: string,
  inGroup: boolean,
  asked: (key: string, value: string, at: Finding) => void,
) {
  const m = w.map(node, path, spec.ENV_VAR_KEYS);
  if (!m) return;
  const sources = ['value', 'generateValue', 'sync', 'fromDatabase', 'fromService', 'fromGroup'].filter((k) =>
    m.has(k),
  );
  if (sources.length !== 1)
    return w.error(
      path,
      node,
      `an env var takes exactly one of value, generateValue, sync, fromDatabase, fromService, fromGroup${sources.length ? ` (got ${sources.join(', ')})` : ''}`,
    );
  const [source] = sources as [string];
  if (source === 'fromGroup') {
    if (inGroup) w.error(`${path}.fromGroup`, get(m, 'fromGroup'), 'an env group cannot take another group');
    if (m.has('key')) w.error(`${path}.key`, get(m, 'key'), 'fromGroup takes no key');
    return void w.str(get(m, 'fromGroup'), `${path}.fromGroup`);
  }
  if (!m.has('key')) w.error(`${path}.key`, node, 'key is required');
  const key = m.has('key') ? w.str(get(m, 'key'), `${path}.key`) : undefined;
  if (inGroup && (source === 'fromDatabase' || source === 'fromService'))
    w.error(`${path}.${source}`, get(m, source), `an env group takes only value or generateValue, not ${source}`);
  const value = source === 'value' ? w.str(get(m, 'value'), `${path}.value`, true) : undefined;
  if (key && VERSION_KEYS.has(key) && value !== undefined)
    asked(key, value, { path: `${path}.value`, ...w.at(get(m, 'value')) });
  if (source === 'generateValue' && w.bool(get(m, 'generateValue'), `${path}.generateValue`) === false)
    w.error(`${path}.generateValue`, get(m, 'generateValue'), 'generateValue can only be true');
  if (source === 'sync' && w.bool(get(m, 'sync'), `${path}.sync`) === true)
    w.error(`${path}.sync`, get(m, 'sync'), 'sync can only be false');
  if (source === 'fromDatabase') {
    const ref = w.map(
      get(m, 'fromDatabase'),
      `${path}.fromDatabase`,
      spec.NESTED.fromDatabase!.keys,
      spec.NESTED.fromDatabase!.required,
    );
    if (get(ref, 'property')) w.oneOf(get(ref, 'property'), `${path}.fromDatabase.property`, spec.DATABASE_PROPERTIES);
  }
  if (source === 'fromService') {
    const p = `${path}.fromService`;
    const ref = w.map(get(m, 'fromService'), p, spec.NESTED.fromService!.keys, spec.NESTED.fromService!.required);
    if (get(ref, 'type')) w.oneOf(get(ref, 'type'), `${p}.type`, spec.SERVICE_TYPES);
    if (ref && !!get(ref, 'property') === !!get(ref, 'envVarKey'))
      w.error(p, get(m, 'fromService'), 'fromService takes one of property and envVarKey');
    if (get(ref, 'property')) w.oneOf(get(ref, 'property'), `${p}.property`, spec.SERVICE_PROPERTIES);
  }
}
