import { conflict } from '../../lib/errors.js';
import type { WithKeyedLock } from '../../lib/keyed-locks.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { Repos } from '../../store/repos/index.js';
import type { InstanceRow } from '../../store/repos/instances.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { Instances, Release } from './instances.js';
import type { Lifecycle } from '../service-state/lifecycle.js';
import type { RefreshRoute } from './live-route.js';
import { DeployFailure } from '../service-state/failures.js';
import type { Logger } from '../../lib/logger.js';

/** How long a service's instances get to shut down (SIGTERM to SIGKILL). */
export const graceOf = (service: ServiceRow) => service.details.maxShutdownDelaySeconds * 1000;

/** Replaces a service's instances by a release's, with no downtime: start, switch traffic, drain the old ones. */
export function createRollover(deps: {
  repos: Pick<Repos, 'services' | 'deploys'>;
  instances: Instances;
  lifecycle: Lifecycle;
  refreshRoute: RefreshRoute;
  withServiceLock: WithKeyedLock;
  releaseOf(service: ServiceRow, deploy: DeployRow): Release;
  log: Logger;
}) {
  const { repos, instances, lifecycle, refreshRoute, log } = deps;

  async function stopInstances(rows: InstanceRow[], graceMs: number) {
    lifecycle.beginStopping(rows);
    try {
      await instances.stop(rows, graceMs);
    } finally {
      lifecycle.endStopping(rows);
    }
  }

  /**
   * Starts the release's instances, switches traffic to them, then drains and stops the others.
   * Under the service's lock, on the service as it is now (`deploy` undefined: its live deploy).
   */
  function rollOver(
    serviceId: string,
    deploy: DeployRow | undefined,
    signal: AbortSignal | undefined,
    switchPointer: (s: ServiceRow) => Promise<ServiceRow>,
  ) {
    return deps.withServiceLock(serviceId, async () => {
      const service = await repos.services.get(serviceId);
      if (!service || lifecycle.isRemoving(serviceId)) throw new DeployFailure('canceled', 'the service was deleted');
      const release = deploy ?? (await repos.deploys.liveOf(service));
      if (!release) throw conflict('the service has no live deploy');
      const needsProcesses = service.type !== 'static_site' && service.type !== 'cron_job';
      let before = await instances.active({ serviceId });
      // A service with a disk runs one instance at a time (docs/deploys.md, "Disks"): the old one stops first.
      if (needsProcesses && before.length > 0 && (await deps.releaseOf(service, release).disk?.())) {
        lifecycle.beginStopping(before); // out of the route before they are stopped
        await refreshRoute(service);
        await stopInstances(before, graceOf(service));
        before = [];
      }
      const started =
        needsProcesses && !service.suspenders.includes('user')
          ? await instances
              .start(deps.releaseOf(service, release), service.details.numInstances, signal)
              .catch((err: Error) => {
                throw new DeployFailure('update_failed', `instances did not become healthy: ${err.message}`);
              })
          : [];
      let switched: ServiceRow;
      try {
        if (signal?.aborted) throw new DeployFailure('canceled', 'canceled before going live');
        // Traffic moves before the deploy is reported live, so whoever sees `live` reaches it.
        await refreshRoute(service, release);
        switched = await switchPointer(service);
      } catch (err) {
        await refreshRoute(service); // back to what is still live
        await stopInstances(started, 1000);
        throw err;
      }
      lifecycle.beginStopping(before); // out of the route before they are stopped
      await refreshRoute(switched);
      // Old instances drain (SIGTERM, up to maxShutdownDelaySeconds) off the deploy's critical path: the next deploy
      // need not wait for them.
      lifecycle.drain(
        stopInstances(before, graceOf(service)).catch((err: Error) =>
          log.error({ err: err.message }, 'stopping old instances failed'),
        ),
      );
      return switched;
    });
  }

  return { rollOver, stopInstances };
}
export type RollOver = ReturnType<typeof createRollover>['rollOver'];
