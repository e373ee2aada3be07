import { rmSync } from 'node:fs';
import path from 'node:path';
import { conflict } from '../../lib/errors.js';
import type { JobStatus } from '../../model/enums.js';
import { PLAN_LIMITS } from '../../model/services.js';
import { JOB_GOING, type JobRepo, type JobRow } from '../../store/repos/jobs.js';
import type { Repos } from '../../store/repos/index.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { exitCodeOf, type LoopDeps, type RunningOnce } from '../instances/instances.js';
import { graceOf } from '../instances/rollover.js';
import { oomKilledReason } from '../service-state/failures.js';
import type { CronDeps } from './cron.js';

export interface JobRunnerDeps extends Omit<LoopDeps, 'repos' | 'runnable'> {
  repos: Pick<Repos, 'services' | 'deploys'> & { jobs: JobRepo };
  collectOutput?: CronDeps['collectOutput'];
  /** The instance dir of a job's process (its id is the job's). */
  instanceDir(serviceId: string, jobId: string): string;
}

/** A job this process watches: its row, its process once spawned, and who canceled it. */
interface Going {
  job: JobRow;
  run?: RunningOnce;
  cancel?: { by?: string };
  /** Its end, once begun: a cancel and the poll that sees the process gone wait for the same one. */
  finishing?: Promise<void>;
  /** Its start, until settled: a cancel meanwhile waits for it, so that it answers once no process is left. */
  launching?: Promise<void>;
}

/** Render's reason object of a run's end (the `reason` of `job_run_ended` and `cron_job_run_ended`). */
type RunReason = { evicted: boolean; nonZeroExit?: number } | ReturnType<typeof oomKilledReason>;

/**
 * Runs one-off jobs (docs/deploys.md, "One-off jobs"): each a process of the live deploy's release, with its own
 * command and plan, watched until it exits; the row moves pending → running → succeeded | failed | canceled, and its end
 * is Render's `job_run_ended` event. Processes outlive Slipway: after a restart, `recover` re-adopts the living ones
 * and ends the others by what they left (their exit status, else failed).
 */
export function createJobRunner(deps: JobRunnerDeps) {
  const { repos, instances, events, log } = deps;
  const going = new Map<string, Going>();
  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<void> | undefined;

  /** Moves the job to its final status (once: whoever loses the compare-and-set does nothing) and records its event. */
  async function end(job: JobRow, status: JobStatus, patch: Parameters<JobRepo['transition']>[3], reason?: RunReason) {
    const ended = await repos.jobs.transition(job.id, JOB_GOING, status, { ...patch, finishedAt: new Date() });
    if (!ended) return;
    await events.record({
      workspaceId: job.workspaceId,
      serviceId: job.serviceId,
      deployId: job.deployId,
      type: 'job_run_ended',
      details: { jobId: job.id, status, ...(reason ? { reason } : {}) },
    });
  }

  /** Stops what is left of the process, stores the rest of its output, and removes its dir. */
  async function cleanUp(job: JobRow, run: RunningOnce, graceMs: number) {
    await instances.stop([run.row], graceMs);
    await deps
      .collectOutput?.({
        instanceId: job.id,
        serviceId: job.serviceId,
        workspaceId: job.workspaceId,
        deployId: job.deployId,
      })
      .catch((err: Error) => log.warn({ jobId: job.id, err: err.message }, 'job output not fully stored'));
    rmSync(run.instanceDir, { recursive: true, force: true });
  }

  /** The process has exited (or was stopped): the job ends by its exit status, or as canceled. */
  const finish = (entry: Going, interrupted = false) => (entry.finishing ??= finishOnce(entry, interrupted));
  async function finishOnce(entry: Going, interrupted: boolean) {
    const { job, run } = entry;
    if (!run) return;
    going.delete(job.id);
    const service = await repos.services.get(job.serviceId);
    if (!service || deps.lifecycle.isRemoving(job.serviceId)) return; // its rows and files go with it
    const code = exitCodeOf(run);
    const oom = code !== 0 && instances.oomKilled(run.row); // read before stop(), which removes the cgroup
    await cleanUp(job, run, 0);
    if (entry.cancel) return end(job, 'canceled', { exitCode: code ?? null, canceledBy: entry.cancel.by ?? null });
    if (code === 0) return end(job, 'succeeded', { exitCode: 0 });
    const memoryMb = PLAN_LIMITS[job.plan].memoryMb;
    const failureReason = oom
      ? `it ran out of memory: the kernel killed it at its plan's limit of ${memoryMb} MiB`
      : code !== undefined
        ? `it exited with status ${code}`
        : interrupted
          ? 'its process ended while Slipway was stopped, without recording an exit status'
          : service.suspenders.includes('user')
            ? 'stopped: the service was suspended'
            : 'its process was killed before it recorded an exit status';
    const reason: RunReason = oom
      ? oomKilledReason(memoryMb)
      : code !== undefined
        ? { evicted: false, nonZeroExit: code }
        : { evicted: true };
    await end(job, 'failed', { exitCode: code ?? null, failureReason }, reason);
  }

  /** One pass over the jobs this process runs: those whose process is gone end. */
  async function check() {
    for (const entry of [...going.values()]) {
      if (!entry.run || instances.isAlive(entry.run.row)) continue;
      await finish(entry).catch((err: Error) => log.error({ jobId: entry.job.id, err: err.message }, 'job end failed'));
    }
  }
  const checkNow = () => (checking ??= check().finally(() => (checking = undefined)));

  return {
    /** Starts a pending job's process (in the background: the job answers `pending` at once, as Render's does). */
    launch(service: ServiceRow, job: JobRow) {
      const entry: Going = { job };
      going.set(job.id, entry);
      entry.launching = (async () => {
        const deploy = await repos.deploys.get(job.deployId);
        if (!deploy) throw new Error('its deploy is gone');
        entry.run = await instances.runOnce(deps.releaseOf(service, deploy), {
          kind: 'job',
          id: job.id,
          command: job.startCommand,
          plan: job.plan,
          onExit: () => void checkNow(),
        });
        const startedAt = entry.run.row.startedAt ?? new Date();
        if (await repos.jobs.transition(job.id, ['pending'], 'running', { startedAt })) entry.job.startedAt = startedAt;
        else {
          // Canceled while it started: it ended then, before it ran, so its process is killed without a grace.
          going.delete(job.id);
          await cleanUp(job, entry.run, 0);
        }
      })().catch(async (err: Error) => {
        going.delete(job.id);
        log.warn({ jobId: job.id, err: err.message }, 'job failed to start');
        await end(job, 'failed', { failureReason: `it could not start: ${err.message}` }).catch((e: Error) =>
          log.error({ jobId: job.id, err: e.message }, 'job end failed'),
        );
      });
      void entry.launching.finally(() => delete entry.launching);
    },
    /** SIGTERM, then SIGKILL after the service's maxShutdownDelaySeconds; 409 once it has ended. */
    async cancel(service: ServiceRow, job: JobRow, by?: string): Promise<JobRow> {
      const ended = () => conflict(`the job is ${job.status}: only a pending or running job can be canceled`);
      if (!JOB_GOING.includes(job.status)) throw ended();
      const entry = going.get(job.id);
      if (entry?.run) {
        entry.cancel = { by };
        await instances.stop([entry.run.row], graceOf(service));
        await finish(entry);
      } else if (job.status === 'pending' || entry) {
        // Not spawned yet: it ends now, and launch() stops the process if one comes; the answer waits for that.
        await end(job, 'canceled', { canceledBy: by ?? null });
        await entry?.launching;
      }
      const after = await repos.jobs.get(job.id);
      if (after?.status === 'canceled') return after;
      job.status = after?.status ?? job.status; // it ended on its own meanwhile
      throw ended();
    },
    /** After a (re)start of Slipway, before its loops: re-adopt jobs still running, end the others. */
    async recover() {
      for (const job of await repos.jobs.inStatus(JOB_GOING)) {
        const row = await instances.get(job.id);
        if (!row) {
          await end(job, 'failed', { failureReason: 'interrupted: Slipway stopped before the job started' });
          continue;
        }
        const dir = deps.instanceDir(job.serviceId, job.id);
        const entry: Going = {
          job,
          run: { row, instanceDir: dir, exitCodeFile: path.join(dir, 'status', 'exit-code') },
        };
        going.set(job.id, entry);
        if (instances.isAlive(row)) {
          if (job.status === 'pending')
            await repos.jobs.transition(job.id, ['pending'], 'running', { startedAt: row.startedAt ?? new Date() });
        } else await finish(entry, true);
      }
    },
    start() {
      timer = setInterval(() => void checkNow(), deps.intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await checking;
    },
  };
}
export type JobRunner = ReturnType<typeof createJobRunner>;
