import type { ServiceEvent } from '../../model/events.js';
import type { NotificationLevel } from '../../model/notifications.js';

/**
 * Which events notify, and at which level (docs/notifications.md): failures notify at `failure` and `all` (Render's
 * default is `failure`), the good news of a failure's end at `all` only. Stored types (core/events.ts records them).
 */
export function notificationLevel(e: Pick<ServiceEvent, 'type' | 'details'>): NotificationLevel | undefined {
  const status = e.details?.status;
  switch (e.type) {
    // A build that fails ends its deploy too (build_ended, then deploy_ended): the deploy's end is the one message.
    case 'deploy_ended':
      return status === 'live' ? 'success' : status === 'canceled' ? undefined : 'failure';
    case 'cron_job_run_ended':
      return status === 'unsuccessful' ? 'failure' : undefined;
    case 'server_failed':
    case 'service_crashlooping':
    case 'datastore_unavailable':
    case 'datastore_port_taken':
    case 'datastore_backup_failed':
    case 'datastore_wal_archive_failed':
    case 'certificate_failed':
      return 'failure';
    case 'certificate_issued':
      return 'success';
    default:
      return undefined;
  }
}

/**
 * Events that notify once per service in this long: an app that crashes every few minutes without reaching the crash
 * loop's threshold (5 in 10 minutes) would otherwise mail its workspace every few minutes. Its suspension still notifies.
 */
export const QUIET_AFTER_MS: Partial<Record<string, number>> = { server_failed: 3600_000 };

/** What a notification says: a subject line and a few lines of text. */
export interface NotificationMessage {
  subject: string;
  text: string;
}

const TITLES: Record<string, string> = {
  deploy_ended: 'Deploy',
  cron_job_run_ended: 'Cron job run failed',
  server_failed: 'Server failed',
  suspender_added: 'Service suspended: it kept crashing',
  postgres_unavailable: 'Postgres database unavailable',
  key_value_unhealthy: 'Key Value instance unavailable',
  postgres_port_taken: 'Postgres database unavailable: its port is taken',
  key_value_port_taken: 'Key Value instance unavailable: its port is taken',
  certificate_failed: 'Certificate order failed',
  certificate_issued: 'Certificate issued',
};

const text = (v: unknown) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));

/** The message of a queued notification, from its event's webhook payload (Render's type and data). */
export function notificationMessage(
  eventType: string,
  payload: string,
  dashboardUrl?: (id: string) => string,
): NotificationMessage {
  const { data = {} } = JSON.parse(payload) as { data?: Record<string, unknown> };
  const name = text(data.serviceName) || text(data.serviceId);
  let title = TITLES[eventType] ?? eventType;
  if (eventType === 'deploy_ended') title = data.status === 'live' ? 'Deploy live' : 'Deploy failed';
  const lines = [
    `${title}: ${name}`,
    ...(typeof data.deployId === 'string' ? [`Deploy: ${data.deployId}`] : []),
    ...(data.name ? [`Domain: ${text(data.name)}`] : []),
    ...(data.reason || data.error ? [`Reason: ${text(data.reason ?? data.error)}`] : []),
    // Services have a dashboard page; datastores (dpg-, red-) are named by id only.
    ...(typeof data.serviceId === 'string' && data.serviceId.startsWith('srv-') && dashboardUrl
      ? [dashboardUrl(data.serviceId)]
      : []),
  ];
  return { subject: `[Slipway] ${title}: ${name}`, text: lines.join('\n') };
}
