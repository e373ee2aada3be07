import { and, eq, inArray } from 'drizzle-orm';
import type { Db } from '../db.js';
import { instances } from '../schema/index.js';

export type InstanceRow = typeof instances.$inferSelect;

export function createInstanceRepo(db: Db) {
  return {
    async insert(row: typeof instances.$inferInsert): Promise<InstanceRow> {
      const [inserted] = await db.insert(instances).values(row).returning();
      return inserted!;
    },
    async update(id: string, patch: Partial<typeof instances.$inferInsert>): Promise<void> {
      await db.update(instances).set(patch).where(eq(instances.id, id));
    },
    /** Instances that have (or may have) a process: starting or running. */
    active(filter: { serviceId?: string; deployId?: string } = {}): Promise<InstanceRow[]> {
      return db
        .select()
        .from(instances)
        .where(
          and(
            inArray(instances.status, ['starting', 'running']),
            filter.serviceId ? eq(instances.serviceId, filter.serviceId) : undefined,
            filter.deployId ? eq(instances.deployId, filter.deployId) : undefined,
          ),
        );
    },
  };
}
export type InstanceRepo = ReturnType<typeof createInstanceRepo>;
