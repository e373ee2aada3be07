/**
 * The builds case of issue 29 for bench/abuse.ts: one workspace keeps `builds` builds going at once, each holding
 * `mb` MiB of memory for `seconds`; bench/abuse.ts times another workspace's deploys meanwhile.
 */
import { fixtureArchive, signUp } from './lib.js';

/**
 * The attacker: `builds` builds started at once, each filling `mb` MiB and holding it for `seconds` (longer than the
 * measurement: they are canceled at stop). Past the workspace's share they wait queued.
 */
export async function startHeavyBuilds(url: string, opts: { builds?: number; mb?: number; seconds?: number } = {}) {
  const { builds = 3, mb = 1024, seconds = 120 } = opts;
  const { call } = await signUp(url);
  const hold = `node -e "const b = Buffer.alloc(${mb} * 1048576, 1); setTimeout(() => b.length, ${seconds * 1000})"`;
  const archive = await fixtureArchive('node-web');
  const started: Array<{ serviceId: string; deployId: string }> = [];
  for (let i = 0; i < builds; i++) {
    const { service } = await call('POST', '/v1/services', {
      type: 'web_service',
      name: `heavy-build-${i}`,
      serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand: hold } },
    });
    const { deployId } = await call('POST', `/v1/services/${service.id}/source/upload`, undefined, archive);
    started.push({ serviceId: service.id, deployId });
  }
  return {
    stop: async () => {
      for (const { serviceId, deployId } of started)
        await call('POST', `/v1/services/${serviceId}/deploys/${deployId}/cancel`).catch(() => undefined);
    },
  };
}
