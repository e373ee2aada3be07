import { isCronSchedule } from '../../lib/cron.js';
import { badRequest } from '../../lib/errors.js';
import { isRelativeInside } from '../../lib/paths.js';
import { BUILD_PLANS, type ServiceType } from '../../model/enums.js';
import type { Limits } from '../../model/limits.js';
import {
  CONTAINER_RUNTIMES,
  PLANS,
  type DockerDetails,
  type MaintenanceMode,
  type ServiceDetails,
  type ServiceDetailsInput,
} from '../../model/services.js';
import { isHeaderName, isHeaderValue } from '../../router/static-rules.js';

/** Runtimes the local runtime can run natively; docker/image need a container engine. */
const NATIVE_RUNTIMES = new Set(['node', 'python', 'ruby', 'go', 'rust', 'elixir']);

/** A build's limits from its buildPlan's memory and CPU: processes as a standard instance, /tmp as large as its memory. */
export const buildLimits = (plan: { memoryMb: number; cpuMillicores: number }): Limits => ({
  ...plan,
  pids: 4096,
  diskMb: plan.memoryMb,
});

const DEFAULTS: ServiceDetails = {
  runtime: 'node',
  plan: 'starter',
  buildPlan: 'starter',
  region: 'oregon',
  numInstances: 1,
  healthCheckPath: '',
  buildCommand: '',
  startCommand: '',
  preDeployCommand: '',
  maxShutdownDelaySeconds: 30,
  schedule: '',
  publishPath: '',
};

/** Applies `input` over `base` (defaults on create) and checks the result for `type`. */
export function mergeDetails(
  type: ServiceType,
  input: ServiceDetailsInput | undefined,
  base: ServiceDetails = DEFAULTS,
  /** Why docker and image services cannot run here (no engine); undefined where they can. */
  noContainers?: string,
): ServiceDetails {
  const i = input ?? {};
  const env = i.envSpecificDetails ?? {};
  const next: ServiceDetails = {
    ...base,
    ...pick(i, [
      'plan',
      'buildPlan',
      'region',
      'numInstances',
      'healthCheckPath',
      'maxShutdownDelaySeconds',
      'schedule',
      'publishPath',
      'preDeployCommand',
      'headers',
      'routes',
    ]),
    runtime: i.runtime ?? i.env ?? base.runtime,
    buildCommand: env.buildCommand ?? i.buildCommand ?? base.buildCommand,
    startCommand: env.startCommand ?? base.startCommand,
    preDeployCommand: env.preDeployCommand ?? i.preDeployCommand ?? base.preDeployCommand,
  } as ServiceDetails;
  const previews =
    i.previews ??
    (i.pullRequestPreviewsEnabled
      ? { generation: i.pullRequestPreviewsEnabled === 'yes' ? 'automatic' : 'off' }
      : undefined);
  if (previews) next.previews = previews as ServiceDetails['previews'];
  if (i.maintenanceMode) next.maintenanceMode = maintenanceMode(type, i.maintenanceMode, base.maintenanceMode);
  // Checked by core/services/autoscaling.ts before it gets here (its own routes); null removes it.
  if (i.autoscaling !== undefined) {
    if (i.autoscaling) next.autoscaling = i.autoscaling;
    else delete next.autoscaling;
  }
  if (type === 'static_site') next.publishPath ||= 'public';
  if (type !== 'static_site') containerDetails(next, i, noContainers);
  if (!(PLANS as readonly string[]).includes(next.plan)) throw badRequest(`plan must be one of ${PLANS.join(', ')}`);
  next.buildPlan ??= 'starter';
  if (!(BUILD_PLANS as readonly string[]).includes(next.buildPlan))
    throw badRequest(`buildPlan must be one of ${BUILD_PLANS.join(', ')}`);
  if (type === 'cron_job') {
    if (!isCronSchedule(next.schedule))
      throw badRequest(
        'serviceDetails.schedule must be a cron expression: 5 fields, e.g. "*/5 * * * *" (or 6 with seconds first)',
      );
  }
  if (next.healthCheckPath && !next.healthCheckPath.startsWith('/'))
    throw badRequest('serviceDetails.healthCheckPath must start with "/"');
  checkRules(next);
  if (next.publishPath && !isRelativeInside(next.publishPath)) {
    throw badRequest('serviceDetails.publishPath must be a relative path inside the repository');
  }
  return next;
}

/** Render's maintenanceMode, merged over what is set: web services only; `uri` an absolute http(s) URL or ''. */
function maintenanceMode(
  type: ServiceType,
  input: Partial<MaintenanceMode>,
  before?: MaintenanceMode,
): MaintenanceMode {
  if (type !== 'web_service') throw badRequest('serviceDetails.maintenanceMode is for web services only');
  const uri = input.uri ?? before?.uri ?? '';
  return { enabled: input.enabled ?? before?.enabled ?? false, uri: uri && redirectTarget(uri) };
}

/**
 * An absolute http(s) URL, as WHATWG's parser writes it (what the router puts in a Location header: no whitespace or
 * control characters left to split a header). A path would not do: every request to the service, its own pages
 * too, gets the maintenance answer.
 */
function redirectTarget(uri: string): string {
  let url: URL | undefined;
  try {
    url = /[\s\u0000-\u001f]/.test(uri) ? undefined : new URL(uri);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw badRequest(
      'serviceDetails.maintenanceMode.uri must be an http:// or https:// URL, or "" for the default page',
    );
  return url.href;
}

/** Render's events for a change of maintenance mode: maintenance_mode_enabled (on or off), …_uri_updated. */
export function maintenanceEvents(before: MaintenanceMode | undefined, after: MaintenanceMode | undefined) {
  const from = before ?? { enabled: false, uri: '' };
  const to = after ?? from;
  return [
    ...(to.enabled !== from.enabled ? [{ type: 'maintenance_mode_enabled', details: { enabled: to.enabled } }] : []),
    ...(to.uri !== from.uri
      ? [{ type: 'maintenance_mode_uri_updated', details: { fromURI: from.uri, toURI: to.uri } }]
      : []),
  ];
}

/** Render's `dockerDetails` and `image`: kept for docker and image services, checked, and refused without an engine. */
function containerDetails(next: ServiceDetails, i: ServiceDetailsInput, noContainers: string | undefined) {
  if (NATIVE_RUNTIMES.has(next.runtime)) return;
  if (!CONTAINER_RUNTIMES.has(next.runtime)) throw badRequest(`runtime "${next.runtime}" is not one Slipway runs`);
  if (noContainers)
    throw badRequest(
      `runtime "${next.runtime}" needs a container engine, which this machine does not have (${noContainers}); use one of ${[...NATIVE_RUNTIMES].join(', ')}`,
    );
  const env = i.envSpecificDetails ?? {};
  if (next.runtime === 'docker') {
    const before = next.docker ?? { dockerfilePath: '', dockerContext: '', dockerCommand: '' };
    const docker: DockerDetails = {
      dockerfilePath: env.dockerfilePath ?? before.dockerfilePath,
      dockerContext: env.dockerContext ?? before.dockerContext,
      dockerCommand: env.dockerCommand ?? before.dockerCommand,
    };
    const credential = env.registryCredentialId ?? before.registryCredentialId;
    if (credential) docker.registryCredentialId = credential;
    for (const field of ['dockerfilePath', 'dockerContext'] as const)
      if (docker[field] && !isRelativeInside(docker[field].replace(/^\.\//, '')))
        throw badRequest(`envSpecificDetails.${field} must be a relative path inside the repository`);
    next.docker = docker;
  }
  if (next.runtime === 'image') {
    const image = i.image ?? next.image;
    if (!image?.imagePath) throw badRequest('an image service needs image.imagePath (registry/name:tag or @sha256:)');
    if (!isImageRef(image.imagePath))
      throw badRequest(
        'image.imagePath must be an image reference: registry/name:tag or registry/name@sha256:<digest>',
      );
    next.image = image;
  }
}

/** `host[:port]/path[:tag][@sha256:hex]`, lower-case path components, as registries name images. */
export const isImageRef = (ref: string) =>
  ref.length <= 512 &&
  /^(?:[a-zA-Z0-9.-]+(?::\d+)?\/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/.test(
    ref,
  );

const MAX_RULES = 100;
/**
 * Wildcards (`*`, `:name`) in one path pattern: a real rule has one or two, and the router matches every request's path
 * against the pattern, in time that grows with both the path's length and the pattern's wildcards.
 */
const MAX_WILDCARDS = 16;
const checkPath = (p: string, field: string) => {
  if (!p.startsWith('/') || p.length > 1024) throw badRequest(`${field} must be a path starting with "/" (max 1024)`);
  const wildcards = p.match(/\*|:[A-Za-z_]/g)?.length ?? 0;
  if (wildcards > MAX_WILDCARDS)
    throw badRequest(`${field} has ${wildcards} wildcards (* and :name); a pattern takes at most ${MAX_WILDCARDS}`);
};
/** Static sites' rules: bounded in number and size, names and values a response can carry. */
function checkRules(d: ServiceDetails) {
  const headers = d.headers ?? [];
  const routes = d.routes ?? [];
  if (headers.length > MAX_RULES || routes.length > MAX_RULES)
    throw badRequest(`a static site takes at most ${MAX_RULES} header rules and ${MAX_RULES} route rules`);
  headers.forEach((h, i) => {
    checkPath(h.path, `headers[${i}].path`);
    if (!isHeaderName(h.name))
      throw badRequest(`headers[${i}].name must be an HTTP header name, not one that frames the response`);
    if (!isHeaderValue(h.value)) throw badRequest(`headers[${i}].value must be text without control characters`);
  });
  routes.forEach((r, i) => {
    if (r.type !== 'redirect' && r.type !== 'rewrite')
      throw badRequest(`routes[${i}].type must be redirect or rewrite`);
    checkPath(r.source, `routes[${i}].source`);
    if (!r.destination || r.destination.length > 2048 || /[\u0000-\u001f]/.test(r.destination))
      throw badRequest(`routes[${i}].destination must be a path or URL (max 2048)`);
  });
}

function pick<T extends object, K extends keyof T>(obj: T, keys: K[]): Partial<T> {
  const out: Partial<T> = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return out;
}
