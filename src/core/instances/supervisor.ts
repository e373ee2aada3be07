import type { Transact } from '../../store/repos/index.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { PLAN_LIMITS } from '../../model/services.js';
import { graceOf } from './rollover.js';
import type { InstanceRow } from '../../store/repos/instances.js';
import { oomKilledReason } from '../service-state/failures.js';
import type { LoopDeps } from './instances.js';
import type { Lifecycle } from '../service-state/lifecycle.js';
import type { WithKeyedLock } from '../../lib/keyed-locks.js';

/** Crashes within this window count towards `stuck_crashlooping`. */
const CRASH_WINDOW_MS = 10 * 60_000;
const CRASHLOOP_THRESHOLD = 5;
const MAX_BACKOFF_MS = 60_000;

/**
 * Watches the live deploys' instances: a process that exited is restarted with exponential
 * backoff, and a service that keeps crashing gets `stuck_crashlooping` in its suspenders.
 * It also fills in missing instances (after a restart of Slipway found some gone).
 */
export function createSupervisor(
  deps: LoopDeps & {
    refreshRoute(service: ServiceRow): Promise<void>;
    /** Instances being stopped count for nothing; the supervisor marks the extras it stops. */
    lifecycle: Pick<Lifecycle, 'isRemoving' | 'isStopping' | 'beginStopping' | 'endStopping'>;
    withServiceLock: WithKeyedLock;
    backoffMs: number;
    transact: Transact;
  },
) {
  const { repos, instances, events, log } = deps;
  const crashes = new Map<string, number[]>(); // serviceId -> crash times
  const restartAt = new Map<string, number>(); // instanceId -> earliest restart time
  const replaceAt = new Map<string, number>(); // serviceId -> earliest time to replace lost instances
  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<void> | undefined;

  /** Render's reason for a crash: the OOM killer, when the runtime saw it do it; else an early exit. */
  const crashReason = (service: ServiceRow, row: InstanceRow) =>
    instances.oomKilled(row) ? oomKilledReason(PLAN_LIMITS[service.details.plan].memoryMb) : { earlyExit: true };

  /** Counts a crash (or a failed start) and returns when the next attempt may be made. */
  async function crashed(service: ServiceRow, deployId: string, details: Record<string, unknown>): Promise<number> {
    const now = Date.now();
    const recent = [...(crashes.get(service.id) ?? []).filter((t) => now - t < CRASH_WINDOW_MS), now];
    crashes.set(service.id, recent);
    await events.record({
      workspaceId: service.workspaceId,
      serviceId: service.id,
      deployId,
      type: 'server_failed',
      details,
    });
    if (recent.length >= CRASHLOOP_THRESHOLD && !service.suspenders.includes('stuck_crashlooping')) {
      // The suspension and its event commit together (the outbox).
      await deps.transact(async (tx) => {
        await tx.services.update(service.id, { suspenders: [...service.suspenders, 'stuck_crashlooping'] });
        await events.record(
          {
            workspaceId: service.workspaceId,
            serviceId: service.id,
            type: 'service_crashlooping',
            details: { crashes: recent.length },
          },
          tx.events,
        );
      });
      events.poke();
    }
    return now + Math.min(MAX_BACKOFF_MS, deps.backoffMs * 2 ** (recent.length - 1));
  }

  async function checkService(serviceId: string) {
    // Re-read under the lock: a deploy, restart or suspend may have just changed the service.
    const service = await repos.services.get(serviceId);
    if (
      !service?.liveDeployId ||
      deps.lifecycle.isRemoving(serviceId) ||
      service.suspenders.includes('user') ||
      service.type === 'static_site' ||
      service.type === 'cron_job'
    )
      return;
    const live = await repos.deploys.liveOf(service);
    if (!live) return;
    const rows = (await instances.active({ deployId: live.id })).filter((r) => !deps.lifecycle.isStopping(r.id));
    let changed = false;
    for (const row of rows) {
      if (row.status !== 'running' || instances.isAlive(row)) continue;
      if (!restartAt.has(row.id)) {
        restartAt.set(
          row.id,
          await crashed(service, row.deployId, {
            instanceID: row.id,
            reason: crashReason(service, row),
            restarts: row.restarts,
          }),
        );
        changed = true;
      }
      if (Date.now() < restartAt.get(row.id)!) continue;
      restartAt.delete(row.id);
      await instances.bumpRestarts(row);
      await instances
        .restart(deps.releaseOf(service, live), { ...row, restarts: row.restarts + 1 })
        .catch(async (err: Error) => {
          log.warn({ serviceId: service.id, instanceId: row.id, err: err.message }, 'instance restart failed');
          await instances.markFailed(row);
        });
      changed = true;
    }
    // Instances lost for good (failed restarts, or gone while Slipway was down) are replaced.
    // Failed replacements count as crashes and wait out the same backoff; extras (from a
    // crash at an odd moment, or numInstances lowered) are stopped, newest first.
    // Instances already draining (a rollover's old ones) count for nothing either way.
    const active = (await instances.active({ deployId: live.id })).filter((r) => !deps.lifecycle.isStopping(r.id));
    const wanted = service.details.numInstances;
    if (active.length > wanted) {
      const extras = active
        .sort((a, b) => (b.startedAt?.getTime() ?? 0) - (a.startedAt?.getTime() ?? 0))
        .slice(0, active.length - wanted);
      deps.lifecycle.beginStopping(extras);
      await deps.refreshRoute(service);
      await instances.stop(extras, graceOf(service)).finally(() => deps.lifecycle.endStopping(extras));
      changed = true;
    }
    const missing = wanted - active.length;
    if (missing > 0 && Date.now() >= (replaceAt.get(service.id) ?? 0)) {
      await instances.start(deps.releaseOf(service, live), missing).catch(async (err: Error) => {
        log.warn({ serviceId: service.id, err: err.message }, 'replacing lost instances failed');
        replaceAt.set(service.id, await crashed(service, live.id, { reason: { unhealthy: err.message } }));
      });
      changed = true;
    }
    if (changed) await deps.refreshRoute((await repos.services.get(service.id)) ?? service);
  }

  async function check() {
    for (const service of await deps.runnable()) {
      if (
        !service.liveDeployId ||
        service.suspenders.includes('user') ||
        service.type === 'static_site' ||
        service.type === 'cron_job'
      )
        continue;
      await deps
        .withServiceLock(service.id, () => checkService(service.id))
        .catch((err: Error) => log.error({ serviceId: service.id, err: err.message }, 'supervisor check failed'));
    }
  }

  return {
    /** One pass now (also used at boot, before traffic is routed). */
    check: () => (checking ??= check().finally(() => (checking = undefined))),
    start() {
      // A store error in a pass is logged and the next pass runs: an unhandled rejection would end the process.
      timer = setInterval(
        () => void this.check().catch((err: Error) => log.error({ err: err.message }, 'supervisor pass failed')),
        deps.intervalMs,
      );
      timer.unref();
    },
    stop: () => clearInterval(timer),
  };
}
