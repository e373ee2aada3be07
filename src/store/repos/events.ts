import { and, desc, eq, inArray, lt, sql, type SQL } from 'drizzle-orm';
import type { NotificationLevel } from '../../model/notifications.js';
import { rowsOf, type Db } from '../db.js';
import { events } from '../schema/index.js';
import { idsWithin, within } from './filters.js';

export type EventRow = typeof events.$inferSelect;
/** An event's notifications: its level, whether email can go (SMTP is set), and its quiet time per service. */
type Notify = { level: NotificationLevel; email: boolean; quietMs?: number };

/**
 * The notifications of an event (docs/notifications.md): one per channel its workspace sends it to. No settings row:
 * Render's defaults (email on, failures only, no previews); a service's override says `default` to follow them.
 */
function notificationsOf(
  row: { id: string; workspaceId: string; serviceId?: string | null; type: string; createdAt: Date },
  eventType: string,
  payload: SQL,
  notify: Notify,
) {
  const serviceId = row.serviceId ?? null;
  // `quietMs`: not when the service had an event of this type that recently (its first one notified).
  const quiet = notify.quietMs
    ? sql`and not exists (select 1 from events x where x.service_id = ${serviceId} and x.type = ${row.type}
        and x.id <> ${row.id} and x.created_at > ${new Date(row.createdAt.getTime() - notify.quietMs)})`
    : sql``;
  return sql`
    insert into notification_deliveries (workspace_id, channel, event_id, event_type, payload)
    select ${row.workspaceId}, ch.channel, e.id, ${eventType}, ${payload}
    from e
    left join notification_settings s on s.workspace_id = ${row.workspaceId}
    left join notification_overrides o on o.service_id = ${serviceId}
    cross join (values ('email'), ('slack')) ch(channel)
    where (case coalesce(nullif(o.notifications_to_send, 'default'), s.notifications_to_send, 'failure')
        when 'all' then true when 'failure' then ${notify.level} = 'failure' else false end)
      and (not exists (select 1 from services p where p.id = ${serviceId} and p.details ? 'parentServer')
        or (case o.preview_notifications_enabled when 'true' then true when 'false' then false
          else coalesce(s.preview_notifications_enabled, false) end))
      and ((ch.channel = 'email' and ${notify.email}::boolean and coalesce(s.email_enabled, true))
        or (ch.channel = 'slack' and s.sealed_slack_url is not null))
      ${quiet}
    returning 1`;
}

export function createEventRepo(db: Db) {
  return {
    /**
     * The event, a pending delivery for each enabled webhook of its workspace whose filter takes it, and a pending
     * notification per channel its workspace's settings (and its service's override) send it to, in one statement (the
     * outbox): all are written or none. A webhook without a filter takes Render's types only; Slipway's own
     * (`slipwayOnly`) go to those that name them. `payload` gets the service's (or datastore's) name here. `notify`: the
     * event's notification level (none: it notifies no one), and whether email can be sent at all (SMTP configured).
     * Answers how many deliveries and notifications it queued.
     */
    async insert(
      row: typeof events.$inferInsert & { createdAt: Date },
      outbox: {
        eventType: string;
        payload: string;
        slipwayOnly: boolean;
        notify?: Notify;
      },
    ): Promise<number> {
      const about = row.serviceId ?? row.datastoreId ?? null;
      const payload = sql`jsonb_set(${outbox.payload}::jsonb, '{data,serviceName}', coalesce(to_jsonb(
            coalesce((select name from services where id = ${about}), (select name from datastores where id = ${about}))
          ), 'null'::jsonb))::text`;
      const result = await db.execute(sql`
        with e as (
          insert into events (id, workspace_id, service_id, deploy_id, datastore_id, type, details, created_at)
          values (${row.id}, ${row.workspaceId}, ${row.serviceId ?? null}, ${row.deployId ?? null},
            ${row.datastoreId ?? null}, ${row.type}, ${JSON.stringify(row.details ?? {})}::jsonb, ${row.createdAt})
          returning id
        ), wd as (
          insert into webhook_deliveries (webhook_id, event_id, event_type, payload)
          select w.id, e.id, ${outbox.eventType}, ${payload}
          from e, webhooks w
          where w.workspace_id = ${row.workspaceId} and w.enabled
            and ((cardinality(w.event_filter) = 0 and not ${outbox.slipwayOnly}) or ${outbox.eventType} = any(w.event_filter))
          returning 1
        ), nd as (${outbox.notify ? notificationsOf(row, outbox.eventType, payload, outbox.notify) : sql`select 1 where false`})
        select 1 from wd union all select 1 from nd`);
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
