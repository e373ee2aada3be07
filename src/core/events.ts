import { newId } from '../lib/ids.js';
import type { EventRepo } from '../store/repos/events.js';

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

export function createEvents(repo: Pick<EventRepo, 'insert'>) {
  return {
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
