import type { WebhookEventType } from '../../model/enums.js';
import type { ServiceEvent } from '../../model/events.js';
import { renderEventType } from '../render-events.js';

/** Datastore events (`datastore_<what>`) by kind: Render's postgres_* / key_value_* names, and the same style else. */
const DATASTORE: Record<'postgres' | 'key_value', Record<string, WebhookEventType>> = {
  postgres: {
    datastore_created: 'postgres_created',
    datastore_available: 'postgres_available',
    datastore_unavailable: 'postgres_unavailable',
    datastore_restarted: 'postgres_restarted',
    datastore_deleted: 'postgres_deleted',
    datastore_suspended: 'postgres_suspended',
    datastore_resumed: 'postgres_resumed',
    datastore_updated: 'postgres_updated',
    datastore_port_taken: 'postgres_port_taken',
  },
  key_value: {
    datastore_created: 'key_value_created',
    datastore_available: 'key_value_available',
    datastore_unavailable: 'key_value_unhealthy',
    datastore_restarted: 'key_value_restarted',
    datastore_deleted: 'key_value_deleted',
    datastore_suspended: 'key_value_suspended',
    datastore_resumed: 'key_value_resumed',
    datastore_updated: 'key_value_updated',
    datastore_port_taken: 'key_value_port_taken',
  },
};

/**
 * The webhook event type of a recorded event. Service and deploy events already carry Render's names (deploy_started,
 * build_ended, server_failed, cron_job_run_ended, service_suspended, …), or are read as Render's (core/render-events.ts:
 * service_crashlooping is suspender_added); Slipway's own pass through unchanged.
 */
export function webhookEventType(e: Pick<ServiceEvent, 'type' | 'datastoreId'>): string {
  if (e.datastoreId) {
    const kind = e.datastoreId.startsWith('red-') ? 'key_value' : 'postgres';
    return DATASTORE[kind][e.type] ?? e.type.replace(/^datastore_/, `${kind}_`);
  }
  return renderEventType(e.type);
}

/** Render's webhook payload: `{type, timestamp, data: {id, serviceId, serviceName, …details}}` (serviceName is added by the store). */
export function webhookPayload(eventId: string, type: string, at: Date, e: ServiceEvent) {
  return {
    type,
    timestamp: at.toISOString(),
    data: {
      ...e.details,
      id: eventId,
      serviceId: e.serviceId ?? e.datastoreId ?? null,
      serviceName: null as string | null,
      ...(e.deployId ? { deployId: e.deployId } : {}),
    },
  };
}
