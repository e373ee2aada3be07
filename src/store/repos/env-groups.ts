import { and, asc, desc, eq, inArray, lt, getTableColumns } from 'drizzle-orm';
import { managerOf, type Manager } from './blueprints.js';
import type { Db } from '../db.js';
import { envGroupLinks, envGroups, services } from '../schema/index.js';
import { within, type ListWindow } from './filters.js';

export type EnvGroupRow = typeof envGroups.$inferSelect;

export interface EnvGroupQuery extends ListWindow {
  workspaceIds?: string[];
  name?: string[];
  environmentId?: string[];
}

export function createEnvGroupRepo(db: Db) {
  return {
    async insert(row: typeof envGroups.$inferInsert): Promise<EnvGroupRow> {
      const [inserted] = await db.insert(envGroups).values(row).returning();
      return inserted!;
    },
    async get(id: string): Promise<EnvGroupRow | undefined> {
      const [row] = await db.select().from(envGroups).where(eq(envGroups.id, id)).limit(1);
      return row;
    },
    list(q: EnvGroupQuery): Promise<Array<EnvGroupRow & { manager: Manager }>> {
      return db
        .select({ ...getTableColumns(envGroups), manager: managerOf('env_groups') })
        .from(envGroups)
        .where(
          and(
            q.workspaceIds ? inArray(envGroups.workspaceId, q.workspaceIds) : undefined,
            q.name?.length ? inArray(envGroups.name, q.name) : undefined,
            q.environmentId?.length ? inArray(envGroups.environmentId, q.environmentId) : undefined,
            within(envGroups.createdAt, q.createdAfter, q.createdBefore),
            within(envGroups.updatedAt, q.updatedAfter, q.updatedBefore),
            q.beforeId ? lt(envGroups.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(envGroups.id))
        .limit(q.limit);
    },
    async update(id: string, patch: Partial<typeof envGroups.$inferInsert>): Promise<EnvGroupRow | undefined> {
      const [row] = await db
        .update(envGroups)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(envGroups.id, id))
        .returning();
      return row;
    },
    async delete(id: string): Promise<void> {
      await db.delete(envGroups).where(eq(envGroups.id, id));
    },
    /** Links are idempotent: linking twice keeps the first link's place in the order. */
    async link(groupId: string, serviceId: string): Promise<void> {
      await db.insert(envGroupLinks).values({ groupId, serviceId }).onConflictDoNothing();
    },
    async unlink(groupId: string, serviceId: string): Promise<boolean> {
      return (
        (
          await db
            .delete(envGroupLinks)
            .where(and(eq(envGroupLinks.groupId, groupId), eq(envGroupLinks.serviceId, serviceId)))
            .returning({ g: envGroupLinks.groupId })
        ).length > 0
      );
    },
    /** The services linked to a group (Render's serviceLinks). */
    linkedServices(groupId: string) {
      return db
        .select({ id: services.id, name: services.name, type: services.type })
        .from(envGroupLinks)
        .innerJoin(services, eq(services.id, envGroupLinks.serviceId))
        .where(eq(envGroupLinks.groupId, groupId))
        .orderBy(asc(envGroupLinks.linkedAt));
    },
    /** The groups linked to a service, in link order (later ones win on the same key). */
    groupsOf(serviceId: string): Promise<EnvGroupRow[]> {
      return db
        .select({ group: envGroups })
        .from(envGroupLinks)
        .innerJoin(envGroups, eq(envGroups.id, envGroupLinks.groupId))
        .where(eq(envGroupLinks.serviceId, serviceId))
        .orderBy(asc(envGroupLinks.linkedAt), asc(envGroupLinks.groupId))
        .then((rows) => rows.map((r) => r.group));
    },
  };
}
export type EnvGroupRepo = ReturnType<typeof createEnvGroupRepo>;
