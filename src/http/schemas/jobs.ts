import { Type } from '@sinclair/typebox';
import { renderPlanId, START_COMMAND_MAX } from '../../core/one-off-jobs.js';
import type { CronRunView } from '../../core/deploys/cron.js';
import { CRON_RUN_STATUSES, JOB_STATUSES } from '../../model/enums.js';
import type { JobRow } from '../../store/repos/jobs.js';
import { IdParam, literalUnion, Timestamp } from './common.js';

// Render's one-off jobs and cron runs by request (docs/deploys.md, "One-off jobs", "Cron runs").

/** Render's job (`jobWithCursor.job`), with Slipway's exitCode and failureReason. */
export const JobBody = Type.Object(
  {
    id: Type.String(),
    serviceId: Type.String(),
    startCommand: Type.String(),
    planId: Type.String({
      description: "Render's instance-type id (plan-srv-008), or the plan's name where it has none",
    }),
    status: literalUnion(JOB_STATUSES),
    createdAt: Timestamp,
    startedAt: Type.Optional(Timestamp),
    finishedAt: Type.Optional(Timestamp),
    exitCode: Type.Optional(
      Type.Integer({ description: "Slipway's: the command's exit status, once it ended with one" }),
    ),
    failureReason: Type.Optional(
      Type.String({ description: "Slipway's: why it failed, when its exit code does not say" }),
    ),
  },
  { title: 'job' },
);
export const jobBody = (job: JobRow, serviceType: string) => ({
  id: job.id,
  serviceId: job.serviceId,
  startCommand: job.startCommand,
  planId: renderPlanId(job.plan, serviceType),
  status: job.status,
  createdAt: job.createdAt.toISOString(),
  ...(job.startedAt ? { startedAt: job.startedAt.toISOString() } : {}),
  ...(job.finishedAt ? { finishedAt: job.finishedAt.toISOString() } : {}),
  ...(job.exitCode !== null ? { exitCode: job.exitCode } : {}),
  ...(job.failureReason ? { failureReason: job.failureReason } : {}),
});

export const JobInput = Type.Object({
  startCommand: Type.String({ minLength: 1, maxLength: START_COMMAND_MAX }),
  planId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});
export const JobParams = Type.Object({ serviceId: IdParam, jobId: IdParam });
/** Render sends `status=succeeded,failed` (comma-separated); repeated keys work too. */
export const JobStatusList = Type.Optional(
  Type.Array(Type.String({ pattern: `^(${JOB_STATUSES.join('|')})(,(${JOB_STATUSES.join('|')}))*$`, maxLength: 100 }), {
    maxItems: JOB_STATUSES.length,
  }),
);

/** Render's cronJobRun. */
export const CronJobRunBody = Type.Object(
  {
    id: Type.String(),
    status: literalUnion(CRON_RUN_STATUSES),
    startedAt: Type.Optional(Timestamp),
    finishedAt: Type.Optional(Timestamp),
    triggeredBy: Type.Optional(Type.String({ description: 'The email of the user who triggered it' })),
  },
  { title: 'cronJobRun' },
);
export const cronJobRunBody = (run: CronRunView) => ({
  id: run.id,
  status: run.status,
  startedAt: run.startedAt.toISOString(),
  ...(run.triggeredBy ? { triggeredBy: run.triggeredBy } : {}),
});
export const CronJobParams = Type.Object({ cronJobId: IdParam });
