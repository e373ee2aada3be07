import { and, desc, eq, inArray, lt, sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../db.js';
import { events } from '../schema/index.js';
import { idsWithin, within } from './filters.js';

export type EventRow = typeof events.$inferSelect;

export function createEventRepo(db: Db) {
  return {
    /**
     * The event and a pending delivery for each enabled webhook of its workspace whose filter takes it, in one
     * statement (the outbox): both are written or neither. `payload` gets the service's (or datastore's) name here.
     * Answers how many deliveries it queued.
     */
    async insert(
      row: typeof events.$inferInsert & { createdAt: Date },
      outbox: { eventType: string; payload: string },
    ): Promise<number> {
      const about = row.serviceId ?? row.datastoreId ?? null;
      const result = await db.execute(sql`
        with e as (
          insert into events (id, workspace_id, service_id, deploy_id, datastore_id, type, details, created_at)
          values (${row.id}, ${row.workspaceId}, ${row.serviceId ?? null}, ${row.deployId ?? null},
            ${row.datastoreId ?? null}, ${row.type}, ${JSON.stringify(row.details ?? {})}::jsonb, ${row.createdAt})
          returning id
        )
        insert into webhook_deliveries (webhook_id, event_id, event_type, payload)
        select w.id, e.id, ${outbox.eventType},
          jsonb_set(${outbox.payload}::jsonb, '{data,serviceName}', coalesce(to_jsonb(
            coalesce((select name from services where id = ${about}), (select name from datastores where id = ${about}))
          ), 'null'::jsonb))::text
        from e, webhooks w
        where w.workspace_id = ${row.workspaceId} and w.enabled
          and (cardinality(w.event_filter) = 0 or ${outbox.eventType} = any(w.event_filter))
        returning 1`);
      return rowsOf(result).length;
    },
    async get(id: string): Promise<EventRow | undefined> {
      return (await db.select().from(events).where(eq(events.id, id)).limit(1))[0];
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
            idsWithin(events.id, 'event', opts.startTime, opts.endTime),
            opts.beforeId ? lt(events.id, opts.beforeId) : undefined,
          ),
        )
        .orderBy(desc(events.id))
        .limit(opts.limit);
    },
  };
}
export type EventRepo = ReturnType<typeof createEventRepo>;
