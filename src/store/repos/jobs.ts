import { and, asc, count, desc, eq, inArray, lt } from 'drizzle-orm';
import type { JobStatus } from '../../model/enums.js';
import type { Db } from '../db.js';
import { jobs } from '../schema/index.js';
import { within } from './filters.js';

export type JobRow = typeof jobs.$inferSelect;
/** Not finished: what counts against the limits on jobs at once. */
export const JOB_GOING: JobStatus[] = ['pending', 'running'];

/** Render's list filters of one service's jobs, with the keyset cursor and page size. */
export interface JobQuery {
  serviceId: string;
  status?: JobStatus[];
  createdAfter?: Date;
  createdBefore?: Date;
  startedAfter?: Date;
  startedBefore?: Date;
  finishedAfter?: Date;
  finishedBefore?: Date;
  beforeId?: string;
  limit: number;
}

/** Rows of one-off jobs; their processes are core/deploys/job-runner.ts's. */
export function createJobRepo(db: Db) {
  const t = jobs;
  return {
    async insert(row: typeof t.$inferInsert): Promise<JobRow> {
      const [created] = await db.insert(t).values(row).returning();
      return created!;
    },
    async get(id: string): Promise<JobRow | undefined> {
      const [found] = await db.select().from(t).where(eq(t.id, id)).limit(1);
      return found;
    },
    /** Newest first. */
    list: (q: JobQuery): Promise<JobRow[]> =>
      db
        .select()
        .from(t)
        .where(
          and(
            eq(t.serviceId, q.serviceId),
            q.status?.length ? inArray(t.status, q.status) : undefined,
            within(t.createdAt, q.createdAfter, q.createdBefore),
            within(t.startedAt, q.startedAfter, q.startedBefore),
            within(t.finishedAt, q.finishedAfter, q.finishedBefore),
            q.beforeId ? lt(t.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(t.id))
        .limit(q.limit),
    /** Jobs in the given states, oldest first (after a restart: the ones to re-adopt). */
    inStatus: (statuses: JobStatus[]): Promise<JobRow[]> =>
      db.select().from(t).where(inArray(t.status, statuses)).orderBy(asc(t.id)),
    /** How many of a service's, and of its workspace's, jobs are not finished. */
    async going(serviceId: string, workspaceId: string): Promise<{ service: number; workspace: number }> {
      const rows = await db
        .select({ serviceId: t.serviceId, n: count() })
        .from(t)
        .where(and(eq(t.workspaceId, workspaceId), inArray(t.status, JOB_GOING)))
        .groupBy(t.serviceId);
      return {
        service: rows.find((r) => r.serviceId === serviceId)?.n ?? 0,
        workspace: rows.reduce((sum, r) => sum + r.n, 0),
      };
    },
    /** Moves a job to `status` only if it is still in one of `from` (the runner and a cancel never both win). */
    async transition(
      id: string,
      from: JobStatus[],
      status: JobStatus,
      patch: Partial<Pick<JobRow, 'exitCode' | 'failureReason' | 'canceledBy' | 'startedAt' | 'finishedAt'>> = {},
    ): Promise<JobRow | undefined> {
      const [row] = await db
        .update(t)
        .set({ ...patch, status })
        .where(and(eq(t.id, id), inArray(t.status, from)))
        .returning();
      return row;
    },
  };
}
export type JobRepo = ReturnType<typeof createJobRepo>;
