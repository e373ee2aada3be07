import path from 'node:path';
import type { Runtime } from '../../runtime/types.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { Repos } from '../../store/repos/index.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { Instances } from './instances.js';
import { artifactOwner, type Layout } from '../service-state/layout.js';
import type { Lifecycle } from '../service-state/lifecycle.js';
import type { RouteTable } from '../../router/route-table.js';

/** Keeps the route table's entry for a service in step with its live deploy. */
export function createRouteRefresher(deps: {
  repos: Pick<Repos, 'deploys'>;
  routeTable: RouteTable;
  runtime: Pick<Runtime, 'addressOf'>;
  layout: Layout;
  instances: Instances;
  lifecycle: Pick<Lifecycle, 'isRemoving' | 'isStopping'>;
}) {
  const { repos, routeTable, runtime, layout, instances, lifecycle } = deps;
  /**
   * Points the router at the service's live deploy, or at `deploy` when it is about to become live. Resolves once the
   * router serves it: a roll-over stops the old instances only then.
   */
  return async function refreshRoute(service: ServiceRow, deploy?: DeployRow) {
    await update(service, deploy);
    await routeTable.applied();
  };

  async function update(service: ServiceRow, deploy?: DeployRow) {
    if (lifecycle.isRemoving(service.id)) return void routeTable.remove(service.slug);
    const details = service.details;
    if (service.suspenders.includes('user')) return routeTable.setSuspended(service.slug, service.id);
    // The app keeps running (and deploying) behind it; turning it off routes to the live instances again.
    if (service.type === 'web_service' && details.maintenanceMode?.enabled)
      return routeTable.setMaintenance(service.slug, service.id, details.maintenanceMode.uri);
    const live = deploy ?? (await repos.deploys.liveOf(service));
    if (service.type === 'static_site') {
      if (live)
        return routeTable.setStatic(
          service.slug,
          service.id,
          path.join(layout.artifactDir(service.id, artifactOwner(live)), service.rootDir, details.publishPath),
          { headers: details.headers ?? [], routes: details.routes ?? [] },
        );
      return routeTable.setInstances(service.slug, service.id, []);
    }
    if (service.type !== 'web_service') return;
    const rows = live ? await instances.active({ deployId: live.id }) : [];
    // Alive, not just `running` in the store: a crashed instance waits there for its restart, and its address must not be routed meanwhile.
    const upstreams = rows
      .filter((r) => r.status === 'running' && r.port && !lifecycle.isStopping(r.id) && instances.isAlive(r))
      .map((r) => ({ host: runtime.addressOf(r.id), port: r.port!, instanceId: r.id }));
    routeTable.setInstances(service.slug, service.id, upstreams);
  }
}
export type RefreshRoute = ReturnType<typeof createRouteRefresher>;
