import { and, eq, inArray, ne } from 'drizzle-orm';
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
    async get(id: string): Promise<InstanceRow | undefined> {
      const [found] = await db.select().from(instances).where(eq(instances.id, id)).limit(1);
      return found;
    },
    /**
     * Instances that have (or may have) a process: starting or running. One-off jobs' processes only with `jobs`: they
     * are neither routed nor supervised, and a deploy does not replace them.
     */
    active(filter: { serviceId?: string; deployId?: string; jobs?: boolean } = {}): Promise<InstanceRow[]> {
      return db
        .select()
        .from(instances)
        .where(
          and(
            inArray(instances.status, ['starting', 'running']),
            filter.serviceId ? eq(instances.serviceId, filter.serviceId) : undefined,
            filter.deployId ? eq(instances.deployId, filter.deployId) : undefined,
            filter.jobs ? undefined : ne(instances.kind, 'job'),
          ),
        );
    },
  };
}
export type InstanceRepo = ReturnType<typeof createInstanceRepo>;
