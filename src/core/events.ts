import { newId } from '../lib/ids.js';
import type { EventRepo, EventRow } from '../store/repos/events.js';

/** One transition of a service, deploy or datastore (docs/architecture.md, "Deploys"): the feed webhooks and the dashboard read. */
export interface ServiceEvent {
  workspaceId: string;
  /** One of serviceId and datastoreId names what the event is about. */
  serviceId?: string;
  datastoreId?: string;
  deployId?: string;
  type: string;
  details?: Record<string, unknown>;
}

/** What events are listed about, and the list's filters and page. */
export type EventsAbout = { serviceId: string } | { datastoreId: string };
export type EventQuery = Parameters<EventRepo['list']>[1];

export function createEvents(repo: Pick<EventRepo, 'insert' | 'list'>) {
  return {
    /** A service's (or a datastore's) events, newest first. */
    list: (about: EventsAbout, q: EventQuery): Promise<EventRow[]> => repo.list(about, q),
    record: (e: ServiceEvent) =>
      repo.insert({
        id: newId('event'),
        workspaceId: e.workspaceId,
        serviceId: e.serviceId ?? null,
        datastoreId: e.datastoreId ?? null,
        deployId: e.deployId ?? null,
        type: e.type,
        details: e.details ?? {},
      }),
  };
}
export type Events = ReturnType<typeof createEvents>;
