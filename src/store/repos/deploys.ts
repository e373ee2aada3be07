import { and, asc, desc, eq, inArray, lt, notInArray } from 'drizzle-orm';
import type { Db } from '../db.js';
import { deploys, sources } from '../schema/index.js';
import { within } from './filters.js';
import { DEPLOY_STATUSES } from '../../model/enums.js';

export type DeployRow = typeof deploys.$inferSelect;
export type DeployStatus = DeployRow['status'];
export type SourceRow = typeof sources.$inferSelect;

export const PENDING: DeployStatus[] = ['created', 'queued'];
export const IN_PROGRESS: DeployStatus[] = ['build_in_progress', 'pre_deploy_in_progress', 'update_in_progress'];
/** Every status a deploy ends in: the rest of DEPLOY_STATUSES. */
export const FINISHED: DeployStatus[] = DEPLOY_STATUSES.filter((s) => !PENDING.includes(s) && !IN_PROGRESS.includes(s));

export interface DeployQuery {
  serviceId: string;
  status?: DeployStatus[];
  createdAfter?: Date;
  createdBefore?: Date;
  finishedAfter?: Date;
  finishedBefore?: Date;
  beforeId?: string;
  limit: number;
}

export function createDeployRepo(db: Db) {
  return {
    async insert(row: typeof deploys.$inferInsert): Promise<DeployRow> {
      const [inserted] = await db.insert(deploys).values(row).returning();
      return inserted!;
    },
    async get(id: string): Promise<DeployRow | undefined> {
      const [row] = await db.select().from(deploys).where(eq(deploys.id, id)).limit(1);
      return row;
    },
    /** The deploy a service's live pointer names: the one way to find a service's live deploy. */
    async liveOf(service: { liveDeployId: string | null }): Promise<DeployRow | undefined> {
      if (!service.liveDeployId) return undefined;
      const [row] = await db.select().from(deploys).where(eq(deploys.id, service.liveDeployId)).limit(1);
      return row;
    },
    list(q: DeployQuery): Promise<DeployRow[]> {
      return db
        .select()
        .from(deploys)
        .where(
          and(
            eq(deploys.serviceId, q.serviceId),
            q.status?.length ? inArray(deploys.status, q.status) : undefined,
            within(deploys.createdAt, q.createdAfter, q.createdBefore),
            within(deploys.finishedAt, q.finishedAfter, q.finishedBefore),
            q.beforeId ? lt(deploys.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(deploys.id))
        .limit(q.limit);
    },
    /** Deploys in the given states, oldest first (all services when serviceId is undefined). */
    inStatus(statuses: DeployStatus[], serviceId?: string): Promise<DeployRow[]> {
      return db
        .select()
        .from(deploys)
        .where(and(inArray(deploys.status, statuses), serviceId ? eq(deploys.serviceId, serviceId) : undefined))
        .orderBy(asc(deploys.id));
    },
    /**
     * Moves a deploy to `status` only if it is still in one of `from`: the compare-and-set
     * that keeps a cancel and the runner from both winning.
     */
    async transition(
      id: string,
      from: DeployStatus[],
      status: DeployStatus,
      patch: Partial<typeof deploys.$inferInsert> = {},
    ): Promise<DeployRow | undefined> {
      const now = new Date();
      const finished = FINISHED.includes(status) ? { finishedAt: now } : {};
      const [row] = await db
        .update(deploys)
        .set({ ...patch, ...finished, status, updatedAt: now })
        .where(and(eq(deploys.id, id), inArray(deploys.status, from)))
        .returning();
      return row;
    },
    async update(id: string, patch: Partial<typeof deploys.$inferInsert>): Promise<void> {
      await db
        .update(deploys)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(deploys.id, id));
    },
    /** Deploys of a service with an artifact on disk, newest first, except `keep`. */
    withArtifacts(serviceId: string, keep: string[]): Promise<DeployRow[]> {
      return db
        .select()
        .from(deploys)
        .where(
          and(
            eq(deploys.serviceId, serviceId),
            eq(deploys.artifactDeleted, false),
            keep.length ? notInArray(deploys.id, keep) : undefined,
          ),
        )
        .orderBy(desc(deploys.id));
    },
    async insertSource(row: typeof sources.$inferInsert): Promise<SourceRow> {
      const [inserted] = await db.insert(sources).values(row).returning();
      return inserted!;
    },
    async getSource(id: string): Promise<SourceRow | undefined> {
      const [row] = await db.select().from(sources).where(eq(sources.id, id)).limit(1);
      return row;
    },
    latestSource(serviceId: string): Promise<SourceRow | undefined> {
      return db
        .select()
        .from(sources)
        .where(eq(sources.serviceId, serviceId))
        .orderBy(desc(sources.id))
        .limit(1)
        .then((r) => r[0]);
    },
    listSources(serviceId: string): Promise<SourceRow[]> {
      return db.select().from(sources).where(eq(sources.serviceId, serviceId)).orderBy(desc(sources.id));
    },
    async deleteSource(id: string): Promise<void> {
      await db.delete(sources).where(eq(sources.id, id));
    },
  };
}
export type DeployRepo = ReturnType<typeof createDeployRepo>;
