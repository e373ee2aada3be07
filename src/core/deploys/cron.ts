import { readFileSync, rmSync } from 'node:fs';
import { nextCronRun } from '../../lib/cron.js';
import type { InstanceRow } from '../../store/repos/instances.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { LoopDeps } from '../instances/instances.js';

interface Run {
  row: InstanceRow;
  exitCodeFile: string;
  instanceDir: string;
}

/** A finished cron run: its output's rest is stored before its dir is removed. */
export interface FinishedCronRun {
  instanceId: string;
  serviceId: string;
  workspaceId: string;
  deployId: string;
}

export interface CronDeps extends LoopDeps {
  /** Stores the rest of a finished run's output before its dir is removed (the log store). */
  collectOutput?(run: FinishedCronRun): Promise<void>;
}

/**
 * Runs live cron jobs on their schedule: one run at a time per job (a run still going when the
 * next is due makes that one skip, as Render does), each recorded as start/end events.
 */
export function createCronRunner(deps: CronDeps) {
  const { repos, instances, events, log } = deps;
  const due = new Map<string, { schedule: string; at: Date }>(); // serviceId -> next run
  const running = new Map<string, Run>();
  let timer: NodeJS.Timeout | undefined;

  async function finishIfDone(service: ServiceRow, run: Run) {
    if (instances.isAlive(run.row)) return;
    running.delete(service.id);
    let code: number | undefined;
    try {
      code = Number(readFileSync(run.exitCodeFile, 'utf8').trim());
    } catch {
      code = undefined; // killed before it could write its status
    }
    await instances.stop([run.row], 0);
    await deps
      .collectOutput?.({
        instanceId: run.row.id,
        serviceId: service.id,
        workspaceId: service.workspaceId,
        deployId: run.row.deployId,
      })
      .catch((err: Error) => log.warn({ serviceId: service.id, err: err.message }, 'cron run output not fully stored'));
    rmSync(run.instanceDir, { recursive: true, force: true }); // one dir per run would pile up
    const status = code === 0 ? 'successful' : 'unsuccessful';
    await events.record({
      workspaceId: service.workspaceId,
      serviceId: service.id,
      deployId: run.row.deployId,
      type: 'cron_job_run_ended',
      details: {
        cronJobRunId: run.row.id,
        status,
        ...(code ? { reason: { nonZeroExit: code } } : code === undefined ? { reason: { evicted: true } } : {}),
      },
    });
  }

  async function tickService(service: ServiceRow, now: Date) {
    const current = running.get(service.id);
    if (current) await finishIfDone(service, current);
    const { schedule } = service.details;
    let next = due.get(service.id);
    if (!next || next.schedule !== schedule) {
      next = { schedule, at: nextCronRun(schedule, now) };
      due.set(service.id, next);
    }
    if (now < next.at) return;
    due.set(service.id, { schedule, at: nextCronRun(schedule, now) });
    if (
      running.has(service.id) ||
      service.suspenders.length ||
      !service.liveDeployId ||
      deps.lifecycle.isRemoving(service.id)
    )
      return;
    const live = await repos.deploys.liveOf(service);
    if (!live) return;
    const run = await instances.runOnce(deps.releaseOf(service, live));
    running.set(service.id, run);
    await events.record({
      workspaceId: service.workspaceId,
      serviceId: service.id,
      deployId: live.id,
      type: 'cron_job_run_started',
      details: { cronJobRunId: run.row.id },
    });
  }

  async function tick() {
    const now = new Date();
    const jobs = (await deps.runnable()).filter((s) => s.type === 'cron_job');
    for (const id of [...due.keys(), ...running.keys()]) {
      if (!jobs.some((s) => s.id === id)) {
        due.delete(id);
        running.delete(id);
      }
    }
    for (const service of jobs) {
      await tickService(service, now).catch((err: Error) =>
        log.error({ serviceId: service.id, err: err.message }, 'cron run failed to start'),
      );
    }
  }

  let ticking: Promise<void> | undefined;
  return {
    start() {
      timer = setInterval(() => void (ticking ??= tick().finally(() => (ticking = undefined))), deps.intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await ticking;
    },
  };
}
