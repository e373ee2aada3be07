import { notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { ServiceEvent } from '../model/events.js';
import type { EventRepo, EventRow } from '../store/repos/events.js';
import { webhookEventType, webhookPayload } from './webhooks/event-types.js';

/** What events are listed about, and the list's filters and page. */
export type EventsAbout = { serviceId: string } | { datastoreId: string };
export type EventQuery = Parameters<EventRepo['list']>[1];

export function createEvents(repo: Pick<EventRepo, 'insert' | 'list' | 'get'>, onRecorded?: () => void) {
  /**
   * Deliveries queued inside transactions whose poke() has not come yet. Most events queue none (their workspace has no
   * webhook): those wake nobody, which spares the dispatcher a claim query per event.
   */
  let owed = 0;
  return {
    /** A service's (or a datastore's) events, newest first. */
    list: (about: EventsAbout, q: EventQuery): Promise<EventRow[]> => repo.list(about, q),
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
        { eventType: type, payload: JSON.stringify(webhookPayload(id, type, createdAt, e)) },
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
