import { notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { ServiceEvent } from '../model/events.js';
import type { EventRepo, EventRow } from '../store/repos/events.js';
import { notificationLevel, QUIET_AFTER_MS } from './notifications/messages.js';
import { storedTypes } from './render-events.js';
import { webhookEventType, webhookPayload } from './webhooks/event-types.js';
import { RENDER_WEBHOOK_EVENT_TYPES } from '../model/enums.js';

const RENDER_TYPES = new Set<string>(RENDER_WEBHOOK_EVENT_TYPES);

/** What events are listed about, and the list's filters and page. */
export type EventsAbout = { serviceId: string } | { datastoreId: string };
/** The list's filters and page; a service's list reads Render's types unless `includeSlipwayEvents` (core/render-events.ts). */
export type EventQuery = Parameters<EventRepo['list']>[1] & { includeSlipwayEvents?: boolean };

/**
 * `onRecorded` wakes the outboxes' dispatchers (webhooks', notifications'); `emailConfigured`: SMTP is set, so email
 * notifications are queued (docs/notifications.md).
 */
export function createEvents(
  repo: Pick<EventRepo, 'insert' | 'list' | 'get'>,
  onRecorded?: () => void,
  options: { emailConfigured?: boolean } = {},
) {
  /**
   * Deliveries queued inside transactions whose poke() has not come yet. Most events queue none (their workspace has no
   * webhook): those wake nobody, which spares the dispatcher a claim query per event.
   */
  let owed = 0;
  return {
    /** A service's (or a datastore's) events, newest first. */
    list: (about: EventsAbout, { includeSlipwayEvents, ...q }: EventQuery): Promise<EventRow[]> =>
      repo.list(about, 'serviceId' in about ? { ...q, types: storedTypes(q.types, includeSlipwayEvents) } : q),
    /** One event (Render's GET /events/:id) with what it is about; the caller checks its workspace. */
    async get(id: string): Promise<{ row: EventRow; about: EventsAbout }> {
      const row = await repo.get(id);
      const about = row?.serviceId
        ? { serviceId: row.serviceId }
        : row?.datastoreId
          ? { datastoreId: row.datastoreId }
          : undefined;
      if (!row || !about) throw notFound('event');
      return { row, about };
    },
    /**
     * Records the event with its webhook deliveries (one statement: the outbox), then wakes the dispatcher. `tx`: the
     * repository of the caller's transaction, so the event commits (or not) with the state change it records; the
     * caller then calls `poke()` after the commit (before it, the dispatcher could not see the deliveries yet).
     */
    async record(e: ServiceEvent, tx: Pick<EventRepo, 'insert'> = repo): Promise<void> {
      const id = newId('event');
      const createdAt = new Date();
      const type = webhookEventType(e);
      const level = notificationLevel(e);
      const queued = await tx.insert(
        {
          id,
          workspaceId: e.workspaceId,
          serviceId: e.serviceId ?? null,
          datastoreId: e.datastoreId ?? null,
          deployId: e.deployId ?? null,
          type: e.type,
          details: e.details ?? {},
          createdAt,
        },
        {
          eventType: type,
          payload: JSON.stringify(webhookPayload(id, type, createdAt, e)),
          slipwayOnly: !RENDER_TYPES.has(type),
          notify: level
            ? { level, email: options.emailConfigured ?? false, quietMs: QUIET_AFTER_MS[e.type] }
            : undefined,
        },
      );
      if (queued === 0) return;
      if (tx === repo) onRecorded?.();
      else owed += queued;
    },
    /**
     * Wakes the dispatcher after a transaction that recorded events has committed, if any queued a delivery. (Two
     * transactions committing at once may share one wake-up that runs before the second commit: its deliveries then go
     * out on the dispatcher's next poll, SLIPWAY_WEBHOOK_POLL_MS later.)
     */
    poke() {
      if (owed === 0) return;
      owed = 0;
      onRecorded?.();
    },
  };
}
export type Events = ReturnType<typeof createEvents>;
