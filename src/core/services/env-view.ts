import type { DeployRepo } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { listens } from '../../model/services.js';
import { platformEnv, resolveEnv, type AppUrls, type EnvLayer, type ResolvedVar } from '../service-state/env.js';

/** What a caller who may not read secrets sees instead of a group's or the service's value. */
export const MASKED_VALUE = '********';
/** Platform variables whose value differs per instance: listed without one. */
const PER_INSTANCE = new Set(['PORT', 'SLIPWAY_INSTANCE_ID', 'RENDER_INSTANCE_ID']);
/** Only services that listen get a PORT. */

/**
 * A service's environment as its next instance would get it, for people to read
 * (docs/architecture.md, "Platform environment"): the same precedence as deploys (service-state/env.ts resolveEnv).
 */
export function createEnvView(deps: {
  deploys: Pick<DeployRepo, 'liveOf'>;
  urls: AppUrls;
  /** The service's variables above the platform's, in precedence order (core/env-groups.ts). */
  layersOf(serviceId: string): Promise<EnvLayer[]>;
}) {
  const platformOf = async (service: ServiceRow) => platformEnv(service, await deps.deploys.liveOf(service), deps.urls);
  return {
    /**
     * Every variable the app sees with its source, sorted by key. Group and service values are secrets:
     * `reveal` false masks them (platform values are never secret).
     */
    async resolved(service: ServiceRow, reveal: boolean): Promise<Array<{ key: string } & ResolvedVar>> {
      const layers = (await deps.layersOf(service.id)).map((layer) =>
        reveal ? layer : { ...layer, vars: layer.vars.map((v) => ({ key: v.key, value: MASKED_VALUE })) },
      );
      return [...resolveEnv(await platformOf(service), layers)]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, v]) => ({ key, ...v }));
    },
    /** The platform's variables for this service; per-instance ones with a null value. */
    async platform(service: ServiceRow): Promise<Array<{ key: string; value: string | null; perInstance: boolean }>> {
      return Object.entries(await platformOf(service))
        .filter(([key, value]) => value !== undefined || PER_INSTANCE.has(key))
        .filter(([key]) => key !== 'PORT' || listens(service.type))
        .map(([key, value]) => ({ key, value: value ?? null, perInstance: PER_INSTANCE.has(key) }));
    },
  };
}
export type EnvView = ReturnType<typeof createEnvView>;
