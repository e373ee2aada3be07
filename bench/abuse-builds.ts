/**
 * The builds case of issue 29 for bench/abuse.ts: one workspace keeps `builds` builds going at once, each holding
 * `mb` MiB of memory for `seconds`; another workspace's deploys are timed meanwhile (deployVictim).
 */
import { fixtureArchive, signUp, sleep } from './lib.js';

const ENDED = ['build_failed', 'update_failed', 'canceled', 'pre_deploy_failed'];

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

/** The victim: a workspace's service from an upload; `measure()` is one deploy's ms from trigger to live. */
export async function deployVictim(url: string) {
  const { call } = await signUp(url);
  const { service } = await call('POST', '/v1/services', {
    type: 'web_service',
    name: 'deploy-victim',
    serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
  });
  const live = async (deployId: string) => {
    for (;;) {
      const d = await call('GET', `/v1/services/${service.id}/deploys/${deployId}`);
      if (d.status === 'live') return;
      if (ENDED.includes(d.status)) throw new Error(`victim's deploy ended ${d.status}: ${d.failureReason}`);
      await sleep(20);
    }
  };
  await live(
    (await call('POST', `/v1/services/${service.id}/source/upload`, undefined, await fixtureArchive('node-web')))
      .deployId,
  );
  return {
    async measure(): Promise<number> {
      const started = performance.now();
      await live((await call('POST', `/v1/services/${service.id}/deploys`, {})).id);
      return performance.now() - started;
    },
  };
}
