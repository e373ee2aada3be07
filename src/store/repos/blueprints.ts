import { and, desc, eq, inArray, lt, sql } from 'drizzle-orm';
import type { Db } from '../db.js';
import { blueprintResources, blueprints, blueprintSyncs } from '../schema/index.js';
import { within, type ListWindow } from './filters.js';

export type BlueprintRow = typeof blueprints.$inferSelect;
/** The blueprint that manages a listed resource, or null: a column lists select beside the resource's own. */
export type Manager = { id: string; name: string } | null;
export const managerOf = (table: 'services' | 'datastores' | 'env_groups') =>
  // Qualified: a bare "id" inside the subquery would be the blueprint's.
  sql<Manager>`(select json_build_object('id', b.id, 'name', b.name) from ${blueprintResources} r join ${blueprints} b on b.id = r.blueprint_id where r.resource_id = ${sql.identifier(table)}.id)`;
export type BlueprintSyncRow = typeof blueprintSyncs.$inferSelect;
export type BlueprintResourceRow = typeof blueprintResources.$inferSelect;
export interface BlueprintQuery extends ListWindow {
  workspaceIds?: string[];
  name?: string[];
}

export function createBlueprintRepo(db: Db) {
  return {
    async insert(row: typeof blueprints.$inferInsert): Promise<BlueprintRow> {
      const [inserted] = await db.insert(blueprints).values(row).returning();
      return inserted!;
    },
    async get(id: string): Promise<BlueprintRow | undefined> {
      const [row] = await db.select().from(blueprints).where(eq(blueprints.id, id)).limit(1);
      return row;
    },
    list(q: BlueprintQuery): Promise<BlueprintRow[]> {
      return db
        .select()
        .from(blueprints)
        .where(
          and(
            q.workspaceIds ? inArray(blueprints.workspaceId, q.workspaceIds) : undefined,
            q.name?.length ? inArray(blueprints.name, q.name) : undefined,
            within(blueprints.createdAt, q.createdAfter, q.createdBefore),
            within(blueprints.updatedAt, q.updatedAfter, q.updatedBefore),
            q.beforeId ? lt(blueprints.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(blueprints.id))
        .limit(q.limit);
    },
    async update(id: string, patch: Partial<typeof blueprints.$inferInsert>): Promise<BlueprintRow | undefined> {
      const [row] = await db
        .update(blueprints)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(blueprints.id, id))
        .returning();
      return row;
    },
    async delete(id: string): Promise<void> {
      await db.delete(blueprints).where(eq(blueprints.id, id));
    },

    /** Starts a sync; undefined when one is running already (the partial unique index). */
    async startSync(row: { id: string; blueprintId: string }): Promise<BlueprintSyncRow | undefined> {
      const [inserted] = await db.insert(blueprintSyncs).values(row).onConflictDoNothing().returning();
      return inserted;
    },
    async getSync(id: string): Promise<BlueprintSyncRow | undefined> {
      const [row] = await db.select().from(blueprintSyncs).where(eq(blueprintSyncs.id, id)).limit(1);
      return row;
    },
    async runningSync(blueprintId: string): Promise<BlueprintSyncRow | undefined> {
      const [row] = await db
        .select()
        .from(blueprintSyncs)
        .where(and(eq(blueprintSyncs.blueprintId, blueprintId), eq(blueprintSyncs.state, 'running')))
        .limit(1);
      return row;
    },
    listSyncs(blueprintId: string, q: { beforeId?: string; limit: number }): Promise<BlueprintSyncRow[]> {
      return db
        .select()
        .from(blueprintSyncs)
        .where(
          and(eq(blueprintSyncs.blueprintId, blueprintId), q.beforeId ? lt(blueprintSyncs.id, q.beforeId) : undefined),
        )
        .orderBy(desc(blueprintSyncs.id))
        .limit(q.limit);
    },
    async beat(id: string): Promise<void> {
      await db.update(blueprintSyncs).set({ heartbeatAt: new Date() }).where(eq(blueprintSyncs.id, id));
    },
    async saveResults(id: string, patch: { results?: unknown[]; commitId?: string }): Promise<void> {
      await db.update(blueprintSyncs).set(patch).where(eq(blueprintSyncs.id, id));
    },
    /** Ends a running sync (compare-and-set: a sync failed as abandoned stays failed). */
    /** Ends a running sync and sets its blueprint's status in one transaction: no reader sees one without the other. */
    async finishSync(
      id: string,
      end: { state: 'succeeded' | 'failed'; error?: string; results?: unknown[] },
      blueprintStatus: 'in_sync' | 'error',
    ): Promise<BlueprintSyncRow | undefined> {
      return db.transaction(async (tx) => {
        const [row] = await tx
          .update(blueprintSyncs)
          .set({ ...end, finishedAt: new Date() })
          .where(and(eq(blueprintSyncs.id, id), eq(blueprintSyncs.state, 'running')))
          .returning();
        if (row)
          await tx
            .update(blueprints)
            .set({ status: blueprintStatus, updatedAt: new Date() })
            .where(eq(blueprints.id, row.blueprintId));
        return row;
      });
    },
    /** Fails running syncs whose pulse is older than `staleBefore` (all running ones when it is undefined). */
    async failAbandoned(staleBefore: Date | undefined, error: string): Promise<BlueprintSyncRow[]> {
      return db
        .update(blueprintSyncs)
        .set({ state: 'failed', error, finishedAt: new Date() })
        .where(
          and(
            eq(blueprintSyncs.state, 'running'),
            staleBefore ? sql`${blueprintSyncs.heartbeatAt} < ${staleBefore.toISOString()}` : undefined,
          ),
        )
        .returning();
    },

    resources(blueprintId: string): Promise<BlueprintResourceRow[]> {
      return db
        .select()
        .from(blueprintResources)
        .where(eq(blueprintResources.blueprintId, blueprintId))
        .orderBy(blueprintResources.kind, blueprintResources.name);
    },
    /** Which blueprint manages a resource (undefined: none). */
    async managerOf(resourceId: string): Promise<BlueprintResourceRow | undefined> {
      const [row] = await db
        .select()
        .from(blueprintResources)
        .where(eq(blueprintResources.resourceId, resourceId))
        .limit(1);
      return row;
    },
    /** Tracks a resource under a blueprint (a resource has one manager: the latest sync to adopt it). */
    async track(row: BlueprintResourceRow): Promise<void> {
      await db
        .insert(blueprintResources)
        .values(row)
        .onConflictDoUpdate({
          target: blueprintResources.resourceId,
          set: { blueprintId: row.blueprintId, kind: row.kind, name: row.name },
        });
    },
    async untrack(blueprintId: string, resourceIds: string[]): Promise<void> {
      if (!resourceIds.length) return;
      await db
        .delete(blueprintResources)
        .where(
          and(eq(blueprintResources.blueprintId, blueprintId), inArray(blueprintResources.resourceId, resourceIds)),
        );
    },
  };
}
export type BlueprintRepo = ReturnType<typeof createBlueprintRepo>;
