import type { WebhookSettings } from '../../model/settings.js';
import type { WebhookSender } from '../../integrations/webhook-sender.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { ClaimedDelivery, WebhookRepo } from '../../store/repos/webhooks.js';
import type { AuditLog } from '../audit.js';
import type { Events } from '../events.js';
import { signatureHeaders } from './signing.js';
import { signingSecrets } from './webhooks.js';
import { createFairDispatcher, retryOutcome, type Claimed } from '../outbox/fair-dispatcher.js';

/** The logged part of a response body. */
export const RESPONSE_BODY_BYTES = 4096;

/** A webhook in a failing streak sends one delivery at a time: a dead endpoint holds one slot, not four. */
export const PER_FAILING_WEBHOOK = 1;

/**
 * Sends the outbox (webhook_deliveries) through the outboxes' fair loop (core/outbox/fair-dispatcher.ts): claims due
 * rows under a lease, taking turns between workspaces within the per-process, per-workspace and per-webhook limits
 * (docs/webhooks.md "Webhooks"), logs every attempt, and reschedules or settles the row in the same statement as its
 * log entry. A process killed mid-send leaves the lease to expire: the row is sent again, with the same webhook-id.
 */
export function createDispatcher(deps: {
  repo: WebhookRepo;
  box: SecretBox;
  sender: WebhookSender;
  settings: WebhookSettings;
  events: Pick<Events, 'record'>;
  audit: Pick<AuditLog, 'record'>;
  log: Logger;
  /**
   * Only this process uses the store (PGlite, under the data-dir lock): leases left by a killed predecessor are handed
   * back at start, so what was in flight is resent at once rather than when its lease runs out.
   */
  soleProcess?: boolean;
}) {
  const { repo, settings, log } = deps;
  // A send ends within the timeout; the lease adds room for the store. Past it, another dispatcher may resend.
  const leaseMs = settings.timeoutMs + 5000;
  const loop = createFairDispatcher<ClaimedDelivery & Claimed>({
    what: 'webhook',
    settings,
    log,
    releaseAll: deps.soleProcess ? () => repo.releaseAll() : undefined,
    claim: async ({ limit, busyTargets, busyWorkspaces }) =>
      (
        await repo.claim({
          limit,
          leaseMs,
          perWebhook: settings.concurrencyPerWebhook,
          perFailingWebhook: PER_FAILING_WEBHOOK,
          perWorkspace: settings.concurrencyPerWorkspace,
          busyWebhooks: busyTargets,
          busyWorkspaces,
        })
      ).map((d) => ({
        ...d,
        target: d.webhookId,
        perTarget: d.failing ? PER_FAILING_WEBHOOK : settings.concurrencyPerWebhook,
      })),
    deliver,
  });

  async function deliver(d: ClaimedDelivery) {
    const sentAt = new Date();
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Slipway-Webhooks/1',
      ...signatureHeaders(signingSecrets(d.webhook, deps.box, sentAt), d.eventId, d.payload, sentAt),
    };
    const result = await deps.sender.send({ url: d.webhook.url, headers, body: d.payload });
    const ok = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    const now = new Date();
    const outcome = retryOutcome(ok, d.attempts, d.createdAt, settings, now);
    const failingSince = await repo.finish(
      d.id,
      {
        id: newId('webhookEvent', sentAt.getTime()),
        webhookId: d.webhookId,
        eventId: d.eventId,
        eventType: d.eventType,
        sentAt,
        statusCode: result.statusCode ?? null,
        durationMs: result.durationMs,
        error: result.error ?? null,
        responseBody: result.responseBody ?? null,
      },
      outcome,
    );
    if (!ok && failingSince && now.getTime() - failingSince.getTime() >= settings.disableAfterMs)
      await disable(d.webhookId);
  }

  /** Sustained failure: the webhook is disabled, with an event in its workspace's feed and an audit entry. */
  async function disable(webhookId: string) {
    const row = await repo.disable(webhookId);
    if (!row) return;
    log.warn({ webhookId }, 'webhook disabled after sustained delivery failures');
    const details = { webhookId, name: row.name, reason: 'sustained delivery failures' };
    // The audit entry first: whoever receives the event can already read it.
    await deps.audit.record({
      workspaceId: row.workspaceId,
      event: 'UpdateWebhookEvent',
      status: 'success',
      actor: { type: 'system' },
      metadata: { webhookId, enabled: 'false', reason: details.reason },
    });
    await deps.events.record({ workspaceId: row.workspaceId, type: 'webhook_disabled', details });
  }

  return { poke: loop.poke, start: loop.start, stop: loop.stop };
}
export type Dispatcher = ReturnType<typeof createDispatcher>;
