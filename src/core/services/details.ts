import { CronExpressionParser } from 'cron-parser';
import { badRequest } from '../../lib/errors.js';
import type { Limits } from '../../runtime/types.js';
import { SERVICE_TYPES, type ServiceType } from '../../store/enums.js';

export { SERVICE_TYPES, type ServiceType };
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

/** A service's settings as stored (services.details); '' means "detect" for commands. */
export interface ServiceDetails {
  runtime: string;
  plan: Plan;
  region: string;
  numInstances: number;
  healthCheckPath: string;
  buildCommand: string;
  startCommand: string;
  preDeployCommand: string;
  maxShutdownDelaySeconds: number;
  schedule: string;
  publishPath: string;
}

/** Render's `serviceDetails` input (POST and PATCH), flattened by `mergeDetails`. */
export interface ServiceDetailsInput {
  runtime?: string;
  env?: string;
  plan?: string;
  region?: string;
  numInstances?: number;
  healthCheckPath?: string;
  buildCommand?: string;
  publishPath?: string;
  preDeployCommand?: string;
  maxShutdownDelaySeconds?: number;
  schedule?: string;
  envSpecificDetails?: { buildCommand?: string; startCommand?: string; preDeployCommand?: string };
}

const DEFAULTS: ServiceDetails = {
  runtime: 'node',
  plan: 'starter',
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
      'region',
      'numInstances',
      'healthCheckPath',
      'maxShutdownDelaySeconds',
      'schedule',
      'publishPath',
      'preDeployCommand',
    ]),
    runtime: i.runtime ?? i.env ?? base.runtime,
    buildCommand: env.buildCommand ?? i.buildCommand ?? base.buildCommand,
    startCommand: env.startCommand ?? base.startCommand,
    preDeployCommand: env.preDeployCommand ?? i.preDeployCommand ?? base.preDeployCommand,
  } as ServiceDetails;
  if (type === 'static_site') next.publishPath ||= 'public';
  if (type !== 'static_site' && !NATIVE_RUNTIMES.has(next.runtime)) {
    throw badRequest(
      `runtime "${next.runtime}" needs a container engine, which the local runtime does not have; use one of ${[...NATIVE_RUNTIMES].join(', ')}`,
    );
  }
  if (!(PLANS as readonly string[]).includes(next.plan)) throw badRequest(`plan must be one of ${PLANS.join(', ')}`);
  if (type === 'cron_job') {
    if (!isCronSchedule(next.schedule))
      throw badRequest(
        'serviceDetails.schedule must be a cron expression: 5 fields, e.g. "*/5 * * * *" (or 6 with seconds first)',
      );
  }
  if (next.healthCheckPath && !next.healthCheckPath.startsWith('/'))
    throw badRequest('serviceDetails.healthCheckPath must start with "/"');
  if (next.publishPath && (next.publishPath.startsWith('/') || next.publishPath.split('/').includes('..'))) {
    throw badRequest('serviceDetails.publishPath must be a relative path inside the repository');
  }
  return next;
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
