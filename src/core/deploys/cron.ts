import { rmSync } from 'node:fs';
import { tickLoop } from '../../lib/tick-loop.js';
import { nextCronRun } from '../../lib/cron.js';
import { conflict, notFound } from '../../lib/errors.js';
import { createKeyedLocks } from '../../lib/keyed-locks.js';
import type { CronRunStatus } from '../../model/enums.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { exitCodeOf, type LoopDeps, type RunningOnce } from '../instances/instances.js';
import { graceOf } from '../instances/rollover.js';

/** Who triggered or canceled a run (Render's `user` of its end event). */
export interface RunUser {
  id: string;
  email: string;
}

interface Run extends RunningOnce {
  startedAt: Date;
  triggeredBy?: RunUser;
  canceled?: { by?: RunUser };
}

/** A run as Render's `cronJobRun` shows it, when triggered by request. */
export interface CronRunView {
  id: string;
  status: CronRunStatus;
  startedAt: Date;
  triggeredBy?: string;
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
 * Runs live cron jobs on their schedule, and now by request: one run at a time per job (a run still going when the
 * next is due makes that one skip, as Render does; a run by request cancels it, as Render's does), each recorded as
 * start/end events.
 */
export function createCronRunner(deps: CronDeps) {
  const { repos, instances, events, log } = deps;
  const due = new Map<string, { schedule: string; at: Date }>(); // serviceId -> next run
  const running = new Map<string, Run>();
  // The schedule's passes, runs by request and cancels of one job take turns: one run at a time holds.
  const withJobLock = createKeyedLocks();

  async function finishIfDone(service: ServiceRow, run: Run) {
    if (instances.isAlive(run.row) || running.get(service.id) !== run) return;
    running.delete(service.id);
    const code = exitCodeOf(run);
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
    const status = run.canceled ? 'canceled' : code === 0 ? 'successful' : 'unsuccessful';
    const user = run.canceled ? run.canceled.by : run.triggeredBy;
    await events.record({
      workspaceId: service.workspaceId,
      serviceId: service.id,
      deployId: run.row.deployId,
      type: 'cron_job_run_ended',
      details: {
        cronJobRunId: run.row.id,
        status,
        ...(run.canceled
          ? {}
          : code
            ? { reason: { nonZeroExit: code } }
            : code === undefined
              ? { reason: { evicted: true } }
              : {}),
        ...(user ? { user } : {}),
      },
    });
  }

  async function startRun(service: ServiceRow, live: DeployRow, triggeredBy?: RunUser): Promise<Run> {
    const started = await instances.runOnce(deps.releaseOf(service, live), { kind: 'cron_run' });
    const run: Run = { ...started, startedAt: started.row.startedAt ?? new Date(), triggeredBy };
    running.set(service.id, run);
    await events.record({
      workspaceId: service.workspaceId,
      serviceId: service.id,
      deployId: live.id,
      type: 'cron_job_run_started',
      details: { cronJobRunId: run.row.id },
    });
    return run;
  }

  /** SIGTERM, then SIGKILL after maxShutdownDelaySeconds; the run ends `canceled`. False when it had already ended. */
  async function cancelRun(service: ServiceRow, run: Run, by?: RunUser): Promise<boolean> {
    if (!instances.isAlive(run.row)) {
      await finishIfDone(service, run);
      return false;
    }
    run.canceled = { by };
    await instances.stop([run.row], graceOf(service));
    await finishIfDone(service, run);
    return true;
  }

  /** The cron job a request names, when it can run: 404 for another type (its id is no cron job's). */
  function runnableJob(service: ServiceRow) {
    if (service.type !== 'cron_job' || deps.lifecycle.isRemoving(service.id)) throw notFound('cron job');
    if (service.suspenders.includes('user')) throw conflict('the cron job is suspended: resume it first');
  }

  async function tickService(service: ServiceRow, now: Date) {
    await withJobLock(service.id, () => tickLocked(service, now));
  }
  async function tickLocked(service: ServiceRow, now: Date) {
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
    if (live) await startRun(service, live);
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

  return {
    /** Runs the job now (Render's POST …/runs): a run still going is canceled first, as Render does. */
    async trigger(service: ServiceRow, by?: RunUser): Promise<CronRunView> {
      runnableJob(service);
      return withJobLock(service.id, async () => {
        const live = await repos.deploys.liveOf(service);
        if (!live) throw conflict('the cron job has no live deploy: deploy it first');
        const current = running.get(service.id);
        if (current) await cancelRun(service, current, by);
        const run = await startRun(service, live, by);
        return {
          id: run.row.id,
          status: 'pending',
          startedAt: run.startedAt,
          ...(by ? { triggeredBy: by.email } : {}),
        };
      });
    },
    /** Cancels the run going (Render's DELETE …/runs); 409 when none is. */
    async cancel(service: ServiceRow, by?: RunUser): Promise<void> {
      if (service.type !== 'cron_job') throw notFound('cron job');
      await withJobLock(service.id, async () => {
        const current = running.get(service.id);
        if (!current || !(await cancelRun(service, current, by))) throw conflict('no run of this cron job is going');
      });
    },
    ...tickLoop(tick, deps.intervalMs, (err) => log.error({ err }, 'cron check failed')),
  };
}
