import { conflict, notFound } from '../../lib/errors.js';
import type { WithKeyedLock } from '../../lib/keyed-locks.js';
import { PENDING } from '../../store/repos/deploys.js';
import type { Repos } from '../../store/repos/index.js';
import type { InstanceRow } from '../../store/repos/instances.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { Events } from '../events.js';
import type { Instances } from './instances.js';
import type { Layout } from '../service-state/layout.js';
import type { Trash } from '../service-state/trash.js';
import type { Lifecycle } from '../service-state/lifecycle.js';
import type { RefreshRoute } from './live-route.js';
import { DeployFailure } from '../service-state/failures.js';
import { graceOf, type RollOver } from './rollover.js';
import type { RouteTable } from '../../router/route-table.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What requests do to a service's processes besides deploying: restart, suspend, resume, delete. */
export function createServiceControl(deps: {
  repos: Pick<Repos, 'deploys'>;
  events: Events;
  layout: Layout;
  trash: Trash;
  routeTable: RouteTable;
  instances: Instances;
  lifecycle: Lifecycle;
  withServiceLock: WithKeyedLock;
  refreshRoute: RefreshRoute;
  rollOver: RollOver;
  /** Unmounts the service's disks: its build disk if kept mounted after its last build, its container storage's. */
  releaseDisks(serviceId: string): Promise<void>;
  stopInstances(rows: InstanceRow[], graceMs: number): Promise<void>;
  /** Runs when a removed service's processes have stopped, before its rows go (the usage meter's last pass). */
  onRemoved?(): Promise<void>;
}) {
  const { repos, events, layout, routeTable, instances, lifecycle, withServiceLock, refreshRoute } = deps;
  /** A service being deleted is gone for requests: 404, as once its row is. */
  const assertPresent = (serviceId: string) => {
    if (lifecycle.isRemoving(serviceId)) throw notFound('service');
  };
  /** Rolls the live deploy over for a request (restart, resume); a deletion begun before or during it is a 404. */
  const rollOverLive = (serviceId: string) =>
    deps
      .rollOver(serviceId, undefined, undefined, async (fresh) => fresh)
      .catch(async (err: unknown) => {
        if (err instanceof DeployFailure && lifecycle.isRemoving(serviceId)) throw notFound('service');
        if (!(err instanceof DeployFailure)) throw err;
        // The app's failure, not Slipway's: the instances that were running keep serving, unless a disk had them
        // stop first (one process at a time on its files).
        const serving = (await instances.active({ serviceId })).some((row) => row.status === 'running');
        const old = serving
          ? 'the running ones keep serving'
          : 'none is running: a service with a disk stops its old instance first';
        throw conflict(`the new instances did not start (${old}): ${err.message}`);
      });

  return {
    assertPresent,
    /** Replaces the live deploy's instances, rolling, with no downtime. */
    async restart(service: ServiceRow) {
      if (!service.liveDeployId) throw conflict('the service has no live deploy to restart');
      if (service.suspenders.includes('user')) throw conflict('the service is suspended: resume it first');
      await rollOverLive(service.id);
      await events.record({
        workspaceId: service.workspaceId,
        serviceId: service.id,
        deployId: service.liveDeployId,
        type: 'server_restarted',
        details: { triggeredByUser: null },
      });
    },
    async stopAll(service: ServiceRow) {
      lifecycle.abortDeploy(service.id);
      await withServiceLock(service.id, async () => {
        await refreshRoute(service);
        await deps.stopInstances(await instances.active({ serviceId: service.id, jobs: true }), graceOf(service));
      });
    },
    /** Stops every instance, runs `work` under the service's lock (nothing starts meanwhile), then starts them again. */
    async withInstancesStopped(service: ServiceRow, work: () => Promise<void>) {
      lifecycle.abortDeploy(service.id);
      await withServiceLock(service.id, async () => {
        const rows = await instances.active({ serviceId: service.id });
        lifecycle.beginStopping(rows); // out of the route before they are stopped
        await refreshRoute(service);
        await deps.stopInstances(rows, graceOf(service));
        await work();
      });
      const fresh = service.suspenders.includes('user') ? undefined : service.liveDeployId;
      if (fresh) await rollOverLive(service.id);
    },
    async resume(service: ServiceRow) {
      if (service.liveDeployId) await rollOverLive(service.id);
      else await refreshRoute(service);
    },
    /** Runs `work`, which writes under the service's dir outside its lock (an upload): refused once a deletion has begun, which waits for it. */
    async writingTo<T>(serviceId: string, work: () => Promise<T>): Promise<T> {
      assertPresent(serviceId);
      return lifecycle.trackWrite(serviceId, work);
    },
    /**
     * Cancels queued deploys, stops the running one and every instance, then moves the files to the trash (they are
     * removed in the background).
     * The service stays marked removing for good (ids are never reused): nothing may touch it
     * again, not even a supervisor pass racing the deletion of its row.
     */
    async remove(service: ServiceRow) {
      lifecycle.markRemoving(service.id);
      try {
        for (const d of await repos.deploys.inStatus(PENDING, service.id))
          await repos.deploys.transition(d.id, PENDING, 'canceled', { failureReason: 'the service was deleted' });
        lifecycle.abortDeploy(service.id);
        while (lifecycle.hasLoop(service.id)) await sleep(50);
        await withServiceLock(service.id, async () => {
          routeTable.remove(service.slug);
          await routeTable.applied();
          await deps.stopInstances(
            await instances.active({ serviceId: service.id, jobs: true }),
            Math.min(graceOf(service), 5000),
          );
        });
        await lifecycle.drained();
        await lifecycle.writesSettled(service.id);
        await lifecycle.tidied(service.id);
        await deps.releaseDisks(service.id);
        deps.trash.discard(layout.serviceDir(service.id));
        await deps.onRemoved?.();
      } catch (err) {
        lifecycle.unmarkRemoving(service.id); // the delete failed: the service lives on
        throw err;
      }
    },
  };
}
