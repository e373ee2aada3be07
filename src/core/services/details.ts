import { CronExpressionParser } from 'cron-parser';
import { badRequest } from '../../lib/errors.js';
import { isRelativeInside } from '../../lib/paths.js';
import { isHeaderName, isHeaderValue, type HeaderRule, type RouteRule } from '../../router/static-rules.js';
import type { Limits } from '../../runtime/types.js';
import { BUILD_PLANS, SERVICE_TYPES, type BuildPlan, type ServiceType } from '../../store/enums.js';

export { BUILD_PLANS, SERVICE_TYPES, type BuildPlan, type ServiceType };
export const RUNTIMES = ['node', 'python', 'ruby', 'go', 'rust', 'elixir', 'docker', 'image'] as const;
/** Runtimes the local runtime can run natively; docker/image need a container engine. */
const NATIVE_RUNTIMES = new Set(['node', 'python', 'ruby', 'go', 'rust', 'elixir']);
export const PLANS = [
  'free',
  'starter',
  'starter_plus',
  'standard',
  'standard_plus',
  'pro',
  'pro_plus',
  'pro_max',
  'pro_ultra',
] as const;
export type Plan = (typeof PLANS)[number];

/**
 * Per instance (and per build of the service): memory and CPU as Render sizes its instance types; processes+threads
 * (pids) and the size of each writable scratch filesystem ($HOME, /tmp: tmpfs, counted in the memory) grow with them.
 * SLIPWAY_PIDS_LIMIT and SLIPWAY_DISK_LIMIT_MB override pids and diskMb for every plan.
 */
export const PLAN_LIMITS: Record<Plan, Limits> = {
  free: { memoryMb: 512, cpuMillicores: 100, pids: 512, diskMb: 512 },
  starter: { memoryMb: 512, cpuMillicores: 500, pids: 1024, diskMb: 1024 },
  starter_plus: { memoryMb: 1024, cpuMillicores: 1000, pids: 2048, diskMb: 2048 },
  standard: { memoryMb: 2048, cpuMillicores: 1000, pids: 4096, diskMb: 4096 },
  standard_plus: { memoryMb: 3072, cpuMillicores: 1500, pids: 4096, diskMb: 6144 },
  pro: { memoryMb: 4096, cpuMillicores: 2000, pids: 8192, diskMb: 8192 },
  pro_plus: { memoryMb: 8192, cpuMillicores: 4000, pids: 8192, diskMb: 16384 },
  pro_max: { memoryMb: 16384, cpuMillicores: 4000, pids: 16384, diskMb: 32768 },
  pro_ultra: { memoryMb: 32768, cpuMillicores: 8000, pids: 16384, diskMb: 65536 },
};

/** A build's limits from its buildPlan's memory and CPU: processes as a standard instance, /tmp as large as its memory. */
export const buildLimits = (plan: { memoryMb: number; cpuMillicores: number }): Limits => ({
  ...plan,
  pids: 4096,
  diskMb: plan.memoryMb,
});

/** A service's settings as stored (services.details); '' means "detect" for commands. */
export interface ServiceDetails {
  runtime: string;
  plan: Plan;
  /** What its builds get (server.ts buildPlanLimits); services stored before it existed read as starter. */
  buildPlan?: BuildPlan;
  region: string;
  numInstances: number;
  healthCheckPath: string;
  buildCommand: string;
  startCommand: string;
  preDeployCommand: string;
  maxShutdownDelaySeconds: number;
  schedule: string;
  publishPath: string;
  /** A static site's header and redirect/rewrite rules (Render's `headers` and `routes`; set by blueprint syncs). */
  headers?: HeaderRule[];
  routes?: RouteRule[];
  /** Render's buildFilter (a top-level service field in its API), replaced whole when set. */
  buildFilter?: BuildFilter;
  /** Render's pull-request previews: `automatic` makes a preview service per pull request (core/github/previews.ts). */
  previews?: { generation: PreviewGeneration };
  /** A preview's parent (Render's `parentServer`); set by Slipway only. */
  parentServer?: { id: string; name: string };
}
export type PreviewGeneration = 'off' | 'manual' | 'automatic';
export interface BuildFilter {
  paths: string[];
  ignoredPaths: string[];
}

/** Render's `serviceDetails` input (POST and PATCH), flattened by `mergeDetails`. */
export interface ServiceDetailsInput {
  runtime?: string;
  env?: string;
  plan?: string;
  buildPlan?: string;
  region?: string;
  numInstances?: number;
  healthCheckPath?: string;
  buildCommand?: string;
  publishPath?: string;
  preDeployCommand?: string;
  maxShutdownDelaySeconds?: number;
  schedule?: string;
  headers?: HeaderRule[];
  routes?: RouteRule[];
  previews?: { generation: PreviewGeneration };
  /** Deprecated by Render for `previews.generation`: `yes` is `automatic`. */
  pullRequestPreviewsEnabled?: 'yes' | 'no';
  envSpecificDetails?: { buildCommand?: string; startCommand?: string; preDeployCommand?: string };
}

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
  if (type === 'static_site') next.publishPath ||= 'public';
  if (type !== 'static_site' && !NATIVE_RUNTIMES.has(next.runtime)) {
    throw badRequest(
      `runtime "${next.runtime}" needs a container engine, which the local runtime does not have; use one of ${[...NATIVE_RUNTIMES].join(', ')}`,
    );
  }
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

/** Render's 5-field cron, or 6 fields with seconds first (a Slipway extension for sub-minute jobs). */
export function isCronSchedule(schedule: string): boolean {
  const fields = schedule.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return false;
  try {
    CronExpressionParser.parse(schedule, { strict: false });
    return true;
  } catch {
    return false;
  }
}

/** The first time `schedule` fires strictly after `after`. */
/** Whether instances of this type listen on PORT (and get one). */
export const listens = (type: ServiceType) => type === 'web_service' || type === 'private_service';

export const nextCronRun = (schedule: string, after: Date): Date =>
  CronExpressionParser.parse(schedule, { currentDate: after }).next().toDate();
