import path from 'node:path';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';

export interface AppUrls {
  /** `http://<slug>.<apps domain>:<router port>` for routed services. */
  externalUrl(slug: string): string;
  externalHostname(slug: string): string;
  /** The service's page for people (the dashboard, once it exists). */
  dashboardUrl(serviceId: string): string;
}

const ROUTED = new Set(['web_service', 'static_site']);

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
  const env: Record<string, string | undefined> = {
    PORT: instance ? (instance.port !== undefined ? String(instance.port) : undefined) : undefined,
    SLIPWAY: 'true',
    SLIPWAY_SERVICE_ID: service.id,
    SLIPWAY_SERVICE_NAME: service.name,
    SLIPWAY_SERVICE_TYPE: service.type,
    SLIPWAY_EXTERNAL_URL: routed ? urls.externalUrl(service.slug) : undefined,
    SLIPWAY_EXTERNAL_HOSTNAME: routed ? urls.externalHostname(service.slug) : undefined,
    SLIPWAY_INSTANCE_ID: instance?.id,
    SLIPWAY_DEPLOY_ID: deploy?.id,
    SLIPWAY_GIT_COMMIT: deploy?.commitId ?? undefined,
    SLIPWAY_GIT_BRANCH: service.repo ? (service.branch ?? undefined) : undefined,
  };
  return env;
}

/** Base environment for processes: a PATH and a locale, nothing inherited from Slipway itself. */
export const BASE_ENV: Record<string, string> = {
  PATH: [...new Set([path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'])].join(':'),
  LANG: 'C.UTF-8',
};

/** One variable as the app sees it, and where its value comes from: `platform`, `envGroup:<id>` or `service`. */
export interface ResolvedVar {
  value: string;
  source: string;
}

/**
 * The precedence, written once: platform < each layer in order (env groups by link order, then the service's own).
 * Undefined platform entries are left out. Deploys (mergeEnv) and GET …/env-vars?resolved=true both read it.
 */
export function resolveEnv(
  platform: Record<string, string | undefined>,
  layers: Array<{ source: string; vars: Array<{ key: string; value: string }> }>,
): Map<string, ResolvedVar> {
  const env = new Map<string, ResolvedVar>();
  for (const [key, value] of Object.entries(platform))
    if (value !== undefined) env.set(key, { value, source: 'platform' });
  for (const layer of layers) for (const { key, value } of layer.vars) env.set(key, { value, source: layer.source });
  return env;
}

/** An instance's or a build's environment: the base, then resolveEnv's variables. */
export function mergeEnv(
  platform: Record<string, string | undefined>,
  layers: Array<{ source: string; vars: Array<{ key: string; value: string }> }>,
): Record<string, string> {
  const env: Record<string, string> = { ...BASE_ENV };
  for (const [key, { value }] of resolveEnv(platform, layers)) env[key] = value;
  return env;
}
