import type { BuildPlan, ServiceType } from './enums.js';
import type { Limits } from './limits.js';
import type { HeaderRule, RouteRule } from './static-rules.js';

/**
 * A service's settings as every layer reads them: the plans and their sizes, and the shape stored in services.details.
 * The rules over them (defaults, validation) are core/services/details.ts's.
 */
export const RUNTIMES = ['node', 'python', 'ruby', 'go', 'rust', 'elixir', 'docker', 'image'] as const;
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

/**
 * Render's instance-type ids (a one-off job's `planId`, docs/deploys.md "One-off jobs"): `plan-srv-<n>`, and
 * `plan-crn-<n>` for a cron job's jobs. 006, 008, 010 and 011 are the ids Render documents for starter, standard, pro and
 * pro plus; the others are Slipway's, in the same sequence. Free has none: Render runs no job on it.
 */
export const RENDER_PLAN_NUMBERS: Partial<Record<Plan, string>> = {
  starter: '006',
  starter_plus: '007',
  standard: '008',
  standard_plus: '009',
  pro: '010',
  pro_plus: '011',
  pro_max: '013',
  pro_ultra: '014',
};

/** Instances a service may run (numInstances, scale, autoscaling's max): each is a process on this one host. */
export const MAX_INSTANCES = 20;

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
  /** runtime docker: Render's envSpecificDetails fields (docs/containers.md); '' means Render's default. */
  docker?: DockerDetails;
  /** runtime image: what it runs (Render's `image`), and the registry credential it pulls with. */
  image?: ImageDetails;
  /** A web service's maintenance mode (Render's): the router answers for it, with its page or a redirect to `uri`. */
  maintenanceMode?: MaintenanceMode;
  /** Render's autoscaling (PUT/DELETE /v1/services/:id/autoscaling; core/services/autoscaling.ts). */
  autoscaling?: Autoscaling;
}
export interface Autoscaling {
  enabled: boolean;
  min: number;
  max: number;
  /** Target average utilization, in percent of the plan's CPU and memory, of the criteria enabled. */
  criteria: { cpu: AutoscalingTarget; memory: AutoscalingTarget };
}
export interface AutoscalingTarget {
  enabled: boolean;
  percentage: number;
}
export interface MaintenanceMode {
  enabled: boolean;
  /** An http(s) URL requests are redirected to (302); '' serves the router's maintenance page (503). */
  uri: string;
}
export interface DockerDetails {
  /** Relative to the repo root; '' is `./Dockerfile` in the root dir. */
  dockerfilePath: string;
  /** The build context, relative to the repo root; '' is the root dir. */
  dockerContext: string;
  /** Replaces the image's CMD, run with /bin/sh -c; '' keeps the image's. */
  dockerCommand: string;
  /** The registry credential a FROM line's private base image is pulled with. */
  registryCredentialId?: string;
}
export interface ImageDetails {
  /** `registry/name:tag` or `registry/name@sha256:…` (Render's image.imagePath). */
  imagePath: string;
  registryCredentialId?: string;
}
export type PreviewGeneration = 'off' | 'manual' | 'automatic';
export interface BuildFilter {
  paths: string[];
  ignoredPaths: string[];
}

/** Render's `serviceDetails` input (POST and PATCH), flattened by `mergeDetails` (core/services/details.ts). */
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
  envSpecificDetails?: {
    buildCommand?: string;
    startCommand?: string;
    preDeployCommand?: string;
    dockerCommand?: string;
    dockerContext?: string;
    dockerfilePath?: string;
    registryCredentialId?: string;
  };
  maintenanceMode?: Partial<MaintenanceMode>;
  /** Set by the autoscaling routes only (a PATCH refuses it, as Render's API has its own routes for it); null removes. */
  autoscaling?: Autoscaling | null;
  /** Render's top-level `image` of an image service (POST and PATCH), moved here by core/services. */
  image?: { imagePath: string; registryCredentialId?: string };
}

/** Runtimes that run in a container (docs/containers.md). */
export const CONTAINER_RUNTIMES = new Set(['docker', 'image']);

/** Whether instances of this type listen on PORT (and get one). */
export const listens = (type: ServiceType) => type === 'web_service' || type === 'private_service';

/** The registry credential a service pulls its image (image) or its base images (docker) with, if it names one. */
export const registryCredentialIdOf = (d: Pick<ServiceDetails, 'image' | 'docker'>) =>
  d.image?.registryCredentialId ?? d.docker?.registryCredentialId;
