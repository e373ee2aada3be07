import { and, desc, eq, inArray, lt } from 'drizzle-orm';
import type { Db } from '../db.js';
import { events } from '../schema.js';
import { within } from './filters.js';

export type EventRow = typeof events.$inferSelect;

export function createEventRepo(db: Db) {
  return {
    async insert(row: typeof events.$inferInsert): Promise<void> {
      await db.insert(events).values(row);
    },
    /** A service's (or a datastore's) events, newest first. */
    list(
      about: { serviceId: string } | { datastoreId: string },
      opts: { types?: string[]; startTime?: Date; endTime?: Date; beforeId?: string; limit: number },
    ): Promise<EventRow[]> {
      return db
        .select()
        .from(events)
        .where(
          and(
            'serviceId' in about ? eq(events.serviceId, about.serviceId) : eq(events.datastoreId, about.datastoreId),
            opts.types?.length ? inArray(events.type, opts.types) : undefined,
            within(events.createdAt, opts.startTime, opts.endTime),
            opts.beforeId ? lt(events.id, opts.beforeId) : undefined,
          ),
        )
        .orderBy(desc(events.id))
        .limit(opts.limit);
    },
  };
}
export type EventRepo = ReturnType<typeof createEventRepo>;
