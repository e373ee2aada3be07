import type PgBoss from 'pg-boss';
import type { IdempotencyRepo } from '../store/repos/idempotency.js';
import type { InviteRepo } from '../store/repos/invites.js';
import type { SessionRepo } from '../store/repos/sessions.js';
import type { GitHubRepo } from '../store/repos/github.js';
import type { WebhookRepo } from '../store/repos/webhooks.js';
import { DELIVERY_MEMORY_MS } from '../core/github/webhook.js';
import { schedulePeriodic } from './queue.js';

const MAINTENANCE_QUEUE = 'maintenance';
const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/** Sent (or given-up) webhook deliveries are kept a week, the delivery log a month. */
const WEBHOOK_DELIVERY_TTL_MS = 7 * 24 * 3_600_000;
const WEBHOOK_LOG_TTL_MS = 30 * 24 * 3_600_000;

interface MaintenanceDeps {
  sessions: Pick<SessionRepo, 'deleteExpired'>;
  invites: Pick<InviteRepo, 'deleteFinished'>;
  idempotency: Pick<IdempotencyRepo, 'deleteOlderThan'>;
  webhooks: Pick<WebhookRepo, 'deleteOld'>;
  github: Pick<GitHubRepo, 'deleteDeliveriesBefore'>;
  /** The store's statistics refresh (Store.analyze: PGlite has no autovacuum). */
  analyze: () => Promise<void>;
  /** Removes datastore exports past their 7 days (core/datastores/exports.ts); returns how many. */
  pruneExports?: (now: Date) => Promise<number>;
  now?: () => Date;
}

/**
 * Removes what has outlived its use (expired sessions, used or expired invites, idempotency replies past 24 h, old
 * webhook deliveries and delivery log entries, GitHub delivery ids past a week, datastore exports past 7 days),
 * then refreshes the planner's statistics so list pages stay index walks as tables grow.
 */
export async function runMaintenance(deps: MaintenanceDeps) {
  const now = deps.now?.() ?? new Date();
  const removed = {
    sessions: await deps.sessions.deleteExpired(now),
    invites: await deps.invites.deleteFinished(now),
    idempotencyKeys: await deps.idempotency.deleteOlderThan(new Date(now.getTime() - IDEMPOTENCY_TTL_MS)),
    webhookRows: await deps.webhooks.deleteOld(
      new Date(now.getTime() - WEBHOOK_DELIVERY_TTL_MS),
      new Date(now.getTime() - WEBHOOK_LOG_TTL_MS),
    ),
    githubDeliveries: await deps.github.deleteDeliveriesBefore(new Date(now.getTime() - DELIVERY_MEMORY_MS)),
    exports: (await deps.pruneExports?.(now)) ?? 0,
  };
  await deps.analyze();
  return removed;
}

/** Registers the job and runs it every 15 minutes. */
export function scheduleMaintenance(boss: PgBoss, deps: MaintenanceDeps) {
  return schedulePeriodic(boss, MAINTENANCE_QUEUE, '*/15 * * * *', () => runMaintenance(deps));
}
