import { index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { JOB_STATUSES } from '../../model/enums.js';
import { PLANS } from '../../model/services.js';
import { createdAt, ts } from './columns.js';
import { services } from './services.js';

// Render's one-off jobs: a command run once in a service's live build (core/one-off-jobs.ts).

export const jobs = pgTable(
  'jobs',
  {
    /** Also its process's instance id (instances.kind = 'job'), and the `instance` label of its log lines. */
    id: text('id').primaryKey(),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    /** Kept on the row: the per-workspace count of jobs going reads it without a join. */
    workspaceId: text('workspace_id').notNull(),
    /** The live deploy whose artifact it runs. */
    deployId: text('deploy_id').notNull(),
    startCommand: text('start_command').notNull(),
    plan: text('plan', { enum: PLANS }).notNull(),
    status: text('status', { enum: JOB_STATUSES }).notNull(),
    exitCode: integer('exit_code'),
    /** Why it failed or was canceled when its exit code does not say (killed, interrupted, never started). */
    failureReason: text('failure_reason'),
    /** Who created it (a user id), and who canceled it. */
    createdBy: text('created_by'),
    canceledBy: text('canceled_by'),
    createdAt: createdAt(),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
  },
  (t) => [
    index('jobs_service_idx').on(t.serviceId, t.id),
    index('jobs_status_idx').on(t.status),
    index('jobs_workspace_status_idx').on(t.workspaceId, t.status),
  ],
);
