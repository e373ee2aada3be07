import { and, desc, eq, lt } from 'drizzle-orm';
import type { Db } from '../db.js';
import { events } from '../schema.js';

export type EventRow = typeof events.$inferSelect;

export function createEventRepo(db: Db) {
  return {
    async insert(row: typeof events.$inferInsert): Promise<void> {
      await db.insert(events).values(row);
    },
    /** A service's events, newest first. */
    list(serviceId: string, opts: { beforeId?: string; limit: number }): Promise<EventRow[]> {
      return db
        .select()
        .from(events)
        .where(and(eq(events.serviceId, serviceId), opts.beforeId ? lt(events.id, opts.beforeId) : undefined))
        .orderBy(desc(events.id))
        .limit(opts.limit);
    },
  };
}
export type EventRepo = ReturnType<typeof createEventRepo>;
