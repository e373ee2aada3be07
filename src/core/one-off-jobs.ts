import { AppError, badRequest, conflict, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { createKeyedLocks } from '../lib/keyed-locks.js';
import { PLANS, RENDER_PLAN_NUMBERS, type Plan } from '../model/services.js';
import type { DeployRepo } from '../store/repos/deploys.js';
import type { JobQuery, JobRepo, JobRow } from '../store/repos/jobs.js';
import type { ServiceRow } from '../store/repos/services.js';
import type { DeployEngine } from './deploys/engine.js';

/** Jobs not finished at once (docs/deploys.md, "One-off jobs"): past either, a new one is a 429. */
export const JOB_LIMITS = { perService: 3, perWorkspace: 10 };
/** A job's command, in characters: a script's name and arguments, not the script. */
export const START_COMMAND_MAX = 10_000;

/** Render's instance-type id of a plan for a service's jobs (`plan-crn-…` for a cron job's); the plan's name without one. */
export function renderPlanId(plan: Plan, serviceType: string): string {
  const n = RENDER_PLAN_NUMBERS[plan];
  return n ? `plan-${serviceType === 'cron_job' ? 'crn' : 'srv'}-${n}` : plan;
}

/** The plan a `planId` names: Render's id (`plan-srv-008`, `plan-crn-008`) or Slipway's plan name (`standard`). */
export function planOf(planId: string): Plan {
  const numbered = /^plan-(?:srv|crn)-(\d{3})$/.exec(planId);
  const plan = numbered ? PLANS.find((p) => RENDER_PLAN_NUMBERS[p] === numbered[1]) : PLANS.find((p) => p === planId);
  if (!plan) {
    const ids = PLANS.map((p) => RENDER_PLAN_NUMBERS[p] && `plan-srv-${RENDER_PLAN_NUMBERS[p]} (${p})`).filter(Boolean);
    throw new AppError('validation_failed', `unknown planId ${JSON.stringify(planId)}`, [
      { field: 'planId', message: `one of ${ids.join(', ')}, or a plan's name` },
    ]);
  }
  return plan;
}

/**
 * Render's one-off jobs as the API acts on them: a command run once in the service's live build, with its env and
 * secret files, on its plan or another (docs/deploys.md, "One-off jobs"). The engine's job runner runs them.
 */
export function createOneOffJobs(deps: {
  repos: { jobs: JobRepo; deploys: Pick<DeployRepo, 'liveOf'> };
  engine: Pick<DeployEngine, 'jobs' | 'assertPresent'>;
  limits?: typeof JOB_LIMITS;
  /** A paid plan needs a workspace in good standing (billing): a job on another plan than its service's too. */
  assertMayAddPaid?: (workspaceId: string, kind: 'service', plan: string) => Promise<void>;
}) {
  const { repos, engine } = deps;
  const limits = deps.limits ?? JOB_LIMITS;
  // The count of jobs going and the insert of a new one are one step per workspace: two requests cannot both pass.
  const withWorkspaceLock = createKeyedLocks();

  const self = {
    async create(service: ServiceRow, input: { startCommand: string; planId?: string }, by?: string): Promise<JobRow> {
      engine.assertPresent(service.id);
      if (service.type === 'static_site') throw badRequest('a static site has no process: it cannot run a job');
      const startCommand = input.startCommand.trim();
      if (!startCommand)
        throw new AppError('validation_failed', 'startCommand is empty', [
          { field: 'startCommand', message: 'a command to run' },
        ]);
      const plan = input.planId === undefined ? service.details.plan : planOf(input.planId);
      if (plan !== service.details.plan) await deps.assertMayAddPaid?.(service.workspaceId, 'service', plan);
      if (service.suspenders.includes('user')) throw conflict('the service is suspended: resume it first');
      const live = await repos.deploys.liveOf(service);
      if (!live) throw conflict('the service has no live deploy: a job runs in its current build, so deploy it first');
      const job = await withWorkspaceLock(service.workspaceId, async () => {
        const going = await repos.jobs.going(service.id, service.workspaceId);
        if (going.service >= limits.perService || going.workspace >= limits.perWorkspace)
          throw new AppError(
            'rate_limited',
            going.service >= limits.perService
              ? `this service has ${going.service} jobs going, its most at once: wait for one to end, or cancel one`
              : `this workspace has ${going.workspace} jobs going, its most at once: wait for one to end, or cancel one`,
          );
        return repos.jobs.insert({
          id: newId('job'),
          serviceId: service.id,
          workspaceId: service.workspaceId,
          deployId: live.id,
          startCommand,
          plan,
          status: 'pending',
          createdBy: by ?? null,
        });
      });
      engine.jobs.launch(service, job);
      return job;
    },
    /** The service's job, else 404 (never another service's). */
    async get(service: ServiceRow, jobId: string): Promise<JobRow> {
      const job = await repos.jobs.get(jobId);
      if (!job || job.serviceId !== service.id) throw notFound('job');
      return job;
    },
    /** Newest first. */
    list: (service: ServiceRow, q: Omit<JobQuery, 'serviceId'>) => repos.jobs.list({ ...q, serviceId: service.id }),
    /** SIGTERM, then SIGKILL after the service's maxShutdownDelaySeconds; 409 once it has ended. */
    async cancel(service: ServiceRow, jobId: string, by?: string): Promise<JobRow> {
      return engine.jobs.cancel(service, await self.get(service, jobId), by);
    },
  };
  return self;
}
export type OneOffJobs = ReturnType<typeof createOneOffJobs>;
