import type { Runtime } from '../../runtime/types.js';
import type { DeployRow, DeployStatus } from '../../store/repos/deploys.js';
import type { Repos } from '../../store/repos/index.js';
import type { InstanceRow } from '../../store/repos/instances.js';
import type { Events } from '../events.js';
import type { Instances } from '../instances/instances.js';
import { failInterruptedDeploys } from './interrupted.js';
import type { RefreshRoute } from '../instances/live-route.js';

/**
 * After a (re)start of Slipway, before the loops start: fails the interrupted deploys, stops the processes that should
 * not be running, sweeps what is left of the gone ones, and routes every service to what is running.
 */
export async function recoverInstances(deps: {
  repos: Pick<Repos, 'services' | 'deploys'>;
  events: Events;
  runtime: Pick<Runtime, 'sweep'>;
  instances: Instances;
  stopInstances(rows: InstanceRow[], graceMs: number): Promise<void>;
  refreshRoute: RefreshRoute;
  onDeployEnded?(status: DeployStatus, deploy: DeployRow): void;
}) {
  const { repos, instances } = deps;
  await failInterruptedDeploys(deps);
  // Processes that should not be running: an old deploy's (its drain was cut short), the
  // interrupted deploy's, half-started ones, cron runs cut off. The supervisor refills. One-off jobs are not among
  // them: the job runner re-adopts those.
  const strays: InstanceRow[] = [];
  for (const row of await instances.active()) {
    const service = await repos.services.get(row.serviceId);
    const wanted =
      service &&
      row.status === 'running' &&
      row.deployId === service.liveDeployId &&
      service.type !== 'cron_job' &&
      !service.suspenders.includes('user');
    if (!wanted) strays.push(row);
  }
  await deps.stopInstances(strays, 1000);
  // Namespaces of instances that are gone (lost while Slipway was down, or never started) go too.
  const kept = new Set((await instances.active({ jobs: true })).map((r) => r.id));
  await deps.runtime.sweep((id) => kept.has(id));
  for (const service of await repos.services.listRunnable()) await deps.refreshRoute(service);
}
