import type { Repos } from '../../store/repos/index.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { InstanceRow } from '../../store/repos/instances.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { Events } from '../events.js';
import type { ServiceDetails } from '../services/details.js';
import type { Instances, Release } from './instances.js';

/** Crashes within this window count towards `stuck_crashlooping`. */
const CRASH_WINDOW_MS = 10 * 60_000;
const CRASHLOOP_THRESHOLD = 5;
const MAX_BACKOFF_MS = 60_000;

/**
 * Watches the live deploys' instances: a process that exited is restarted with exponential
 * backoff, and a service that keeps crashing gets `stuck_crashlooping` in its suspenders.
 * It also fills in missing instances (after a restart of Slipway found some gone).
 */
export function createSupervisor(deps: {
  repos: Pick<Repos, 'services' | 'deploys'>;
  instances: Instances;
  events: Events;
  log: { warn(o: object, m?: string): void; error(o: object, m?: string): void };
  releaseOf(service: ServiceRow, deploy: DeployRow): Release;
  refreshRoute(service: ServiceRow): Promise<void>;
  stopping: Set<string>;
  intervalMs: number;
  backoffMs: number;
}) {
  const { repos, instances, events, log } = deps;
  const crashes = new Map<string, number[]>(); // serviceId -> crash times
  const restartAt = new Map<string, number>(); // instanceId -> earliest restart time
  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<void> | undefined;

  async function crashed(service: ServiceRow, row: InstanceRow) {
    const now = Date.now();
    const recent = [...(crashes.get(service.id) ?? []).filter((t) => now - t < CRASH_WINDOW_MS), now];
    crashes.set(service.id, recent);
    restartAt.set(row.id, now + Math.min(MAX_BACKOFF_MS, deps.backoffMs * 2 ** (recent.length - 1)));
    await events.record({ workspaceId: service.workspaceId, serviceId: service.id, deployId: row.deployId, type: 'server_failed', details: { instanceID: row.id, reason: { earlyExit: true }, restarts: row.restarts } });
    if (recent.length >= CRASHLOOP_THRESHOLD && !service.suspenders.includes('stuck_crashlooping')) {
      await repos.services.update(service.id, { suspenders: [...service.suspenders, 'stuck_crashlooping'] });
      await events.record({ workspaceId: service.workspaceId, serviceId: service.id, type: 'service_crashlooping', details: { crashes: recent.length } });
    }
  }

  async function checkService(service: ServiceRow) {
    if (!service.liveDeployId || service.suspenders.includes('user') || service.type === 'static_site' || service.type === 'cron_job') return;
    const live = await repos.deploys.get(service.liveDeployId);
    if (!live) return;
    const rows = (await instances.active({ deployId: live.id })).filter((r) => !deps.stopping.has(r.id));
    let changed = false;
    for (const row of rows) {
      if (row.status !== 'running' || instances.isAlive(row)) continue;
      if (!restartAt.has(row.id)) {
        await crashed(service, row);
        changed = true;
      }
      if (Date.now() < restartAt.get(row.id)!) continue;
      restartAt.delete(row.id);
      await instances.bumpRestarts(row);
      await instances.restart(deps.releaseOf(service, live), { ...row, restarts: row.restarts + 1 }).catch(async (err: Error) => {
        log.warn({ serviceId: service.id, instanceId: row.id, err: err.message }, 'instance restart failed');
        await instances.markFailed(row);
      });
      changed = true;
    }
    // Instances lost for good (failed restarts, or gone while Slipway was down) are replaced.
    const missing = (service.details as ServiceDetails).numInstances - (await instances.active({ deployId: live.id })).length;
    if (missing > 0) {
      await instances.start(deps.releaseOf(service, live), missing).catch((err: Error) => log.warn({ serviceId: service.id, err: err.message }, 'replacing lost instances failed'));
      changed = true;
    }
    if (changed) await deps.refreshRoute((await repos.services.get(service.id)) ?? service);
  }

  async function check() {
    // A store outage must not become an unhandled rejection (it would end the process): log it, retry next tick.
    const runnable = await repos.services.listRunnable().catch((err: Error) => {
      log.error({ err: err.message }, 'supervisor: cannot read services');
      return [];
    });
    for (const service of runnable) {
      await checkService(service).catch((err: Error) => log.error({ serviceId: service.id, err: err.message }, 'supervisor check failed'));
    }
  }

  return {
    /** One pass now (also used at boot, before traffic is routed). */
    check: () => (checking ??= check().finally(() => (checking = undefined))),
    start() {
      timer = setInterval(() => void this.check(), deps.intervalMs);
      timer.unref();
    },
    stop: () => clearInterval(timer),
  };
}
