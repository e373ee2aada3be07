import path from 'node:path';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { PLAN_LIMITS } from '../../model/services.js';

export interface AppUrls {
  /** `http://<slug>.<apps domain>:<router port>` for routed services. */
  externalUrl(slug: string): string;
  externalHostname(slug: string): string;
  /** The service's page for people (the dashboard, once it exists). */
  dashboardUrl(serviceId: string): string;
}

const ROUTED = new Set(['web_service', 'static_site']);
/** RENDER_SERVICE_TYPE's values, as Render documents them. */
const RENDER_TYPE: Record<ServiceRow['type'], string> = {
  web_service: 'web',
  private_service: 'pserv',
  background_worker: 'worker',
  cron_job: 'cron',
  static_site: 'static',
};

/** `owner/name` of a repo URL (`https://host/owner/name.git`, `git@host:owner/name`), as RENDER_GIT_REPO_SLUG. */
export function repoSlug(repo: string): string | undefined {
  const scp = /^[^/@]+@[^:/]+:(.+)$/.exec(repo);
  let pathname: string;
  if (scp) pathname = scp[1]!;
  else if (URL.canParse(repo)) pathname = new URL(repo).pathname;
  else return undefined;
  const slug = pathname.replace(/^\/+|\/+$/g, '').replace(/\.git$/, '');
  return slug || undefined;
}

/**
 * The variables Slipway injects (docs/architecture.md, "Platform environment"). Per-instance ones (PORT, SLIPWAY_INSTANCE_ID)
 * are undefined when no instance is given, which is how GET …/platform-env shows them.
 */
export function platformEnv(
  service: ServiceRow,
  deploy: DeployRow | undefined,
  urls: AppUrls,
  instance?: { id: string; port?: number },
) {
  const routed = ROUTED.has(service.type);
  const externalUrl = routed ? urls.externalUrl(service.slug) : undefined;
  const externalHostname = routed ? urls.externalHostname(service.slug) : undefined;
  const commit = deploy?.commitId ?? undefined;
  const branch = service.repo ? (service.branch ?? undefined) : undefined;
  const limits = PLAN_LIMITS[service.details.plan];
  const env: Record<string, string | undefined> = {
    PORT: instance ? (instance.port !== undefined ? String(instance.port) : undefined) : undefined,
    // Render's names (docs/deploys.md, "Render's environment"), so that apps written for Render run unchanged.
    RENDER: 'true',
    IS_PULL_REQUEST: 'false',
    RENDER_SERVICE_ID: service.id,
    RENDER_SERVICE_NAME: service.name,
    RENDER_SERVICE_TYPE: RENDER_TYPE[service.type],
    RENDER_EXTERNAL_URL: externalUrl ?? '',
    RENDER_EXTERNAL_HOSTNAME: externalHostname ?? '',
    RENDER_INSTANCE_ID: instance?.id,
    RENDER_DISCOVERY_SERVICE: service.slug,
    RENDER_CPU_COUNT: limits ? String(limits.cpuMillicores / 1000) : undefined,
    RENDER_GIT_COMMIT: commit,
    RENDER_GIT_BRANCH: branch,
    RENDER_GIT_REPO_SLUG: service.repo ? repoSlug(service.repo) : undefined,
    SLIPWAY: 'true',
    SLIPWAY_SERVICE_ID: service.id,
    SLIPWAY_SERVICE_NAME: service.name,
    SLIPWAY_SERVICE_TYPE: service.type,
    SLIPWAY_EXTERNAL_URL: externalUrl,
    SLIPWAY_EXTERNAL_HOSTNAME: externalHostname,
    SLIPWAY_INSTANCE_ID: instance?.id,
    SLIPWAY_DEPLOY_ID: deploy?.id,
    SLIPWAY_GIT_COMMIT: commit,
    SLIPWAY_GIT_BRANCH: branch,
  };
  return env;
}

/** Base environment for processes: a PATH and a locale, nothing inherited from Slipway itself. */
export const BASE_ENV: Record<string, string> = {
  PATH: [...new Set([path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'])].join(':'),
  LANG: 'C.UTF-8',
};

/**
 * One layer of a service's environment, in precedence order (later wins): each env group's in link order, then the
 * service's own (core/env-groups.ts layersOf).
 */
export interface EnvLayer {
  source: string;
  vars: Array<{ key: string; value: string }>;
}

/** One variable as the app sees it, and where its value comes from: `platform`, `envGroup:<id>` or `service`. */
export interface ResolvedVar {
  value: string;
  source: string;
}

/**
 * The precedence, written once: platform < each layer in order (env groups by link order, then the service's own).
 * Undefined platform entries are left out. Deploys (mergeEnv) and GET …/env-vars?resolved=true both read it.
 */
export function resolveEnv(platform: Record<string, string | undefined>, layers: EnvLayer[]): Map<string, ResolvedVar> {
  const env = new Map<string, ResolvedVar>();
  for (const [key, value] of Object.entries(platform))
    if (value !== undefined) env.set(key, { value, source: 'platform' });
  for (const layer of layers) for (const { key, value } of layer.vars) env.set(key, { value, source: layer.source });
  return env;
}

/** An instance's or a build's environment: the base, then resolveEnv's variables. */
export function mergeEnv(platform: Record<string, string | undefined>, layers: EnvLayer[]): Record<string, string> {
  const env: Record<string, string> = { ...BASE_ENV };
  for (const [key, { value }] of resolveEnv(platform, layers)) env[key] = value;
  return env;
}
