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
