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

/** The logged part of a response body. */
export const RESPONSE_BODY_BYTES = 4096;

/** The delay before retry `n` (n = attempts made): base·2^(n−1), at most 240·base, ±20 % jitter. */
export function retryDelayMs(attempts: number, baseMs: number, random = Math.random): number {
  const plain = Math.min(baseMs * 2 ** Math.max(0, attempts - 1), baseMs * 240);
  return Math.round(plain * (0.8 + 0.4 * random()));
}

/** A webhook in a failing streak sends one delivery at a time: a dead endpoint holds one slot, not four. */
export const PER_FAILING_WEBHOOK = 1;

function count(counts: Map<string, number>, key: string, by: number) {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

/**
 * Sends the outbox (webhook_deliveries): claims due rows under a lease, taking turns between workspaces within the
 * per-process, per-workspace and per-webhook limits (docs/webhooks.md "Webhooks"), sends each off the request path, logs every
 * attempt, and reschedules or settles the row in the same statement as its log entry.
 * A process killed mid-send leaves the lease to expire: the row is sent again, with the same webhook-id.
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
  const busyWebhooks = new Map<string, number>();
  const busyWorkspaces = new Map<string, number>();
  let inFlight = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let passing: Promise<void> | undefined;
  let again = false;
  /** The last pass filled every slot: a finished send looks again. */
  let full = false;
  const sends = new Set<Promise<void>>();

  /** Claims what the limits allow (the store takes turns between workspaces) until no room or nothing more comes. */
  async function pass() {
    for (;;) {
      const room = settings.concurrency - inFlight;
      full = room <= 0;
      if (stopped || full) return;
      const claimed = await repo.claim({
        limit: room,
        leaseMs,
        perWebhook: settings.concurrencyPerWebhook,
        perFailingWebhook: PER_FAILING_WEBHOOK,
        perWorkspace: settings.concurrencyPerWorkspace,
        busyWebhooks,
        busyWorkspaces,
      });
      for (const d of claimed) start(d);
      full = claimed.length >= room;
      if (!full) return;
    }
  }

  function poke() {
    if (stopped) return;
    if (passing) {
      again = true;
      return;
    }
    passing = pass()
      .catch((err: unknown) => log.error({ err }, 'webhook dispatcher pass failed'))
      .finally(() => {
        passing = undefined;
        if (again) {
          again = false;
          poke();
        }
      });
  }

  function start(d: ClaimedDelivery) {
    inFlight++;
    count(busyWebhooks, d.webhookId, 1);
    count(busyWorkspaces, d.workspaceId, 1);
    const sending = deliver(d)
      .catch((err: unknown) =>
        log.error({ err, webhookId: d.webhookId, eventId: d.eventId }, 'webhook delivery failed'),
      )
      .finally(() => {
        // Rows may have been held back by a limit this send counted against: they may go now. Otherwise new events
        // poke, and the poll finds retries.
        const limited =
          full ||
          (busyWebhooks.get(d.webhookId) ?? 0) >= (d.failing ? PER_FAILING_WEBHOOK : settings.concurrencyPerWebhook) ||
          (busyWorkspaces.get(d.workspaceId) ?? 0) >= settings.concurrencyPerWorkspace;
        inFlight--;
        count(busyWebhooks, d.webhookId, -1);
        count(busyWorkspaces, d.workspaceId, -1);
        sends.delete(sending);
        if (limited) poke();
      });
    sends.add(sending);
  }

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
    const delay = retryDelayMs(d.attempts + 1, settings.retryBaseMs);
    const outcome = ok
      ? ({ status: 'succeeded' } as const)
      : now.getTime() + delay - d.createdAt.getTime() > settings.retryWindowMs
        ? ({ status: 'failed' } as const)
        : ({ status: 'pending', nextAttemptAt: new Date(now.getTime() + delay) } as const);
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

  return {
    poke,
    async start() {
      if (deps.soleProcess) await repo.releaseAll();
      timer = setInterval(poke, settings.pollMs);
      timer.unref();
      poke();
    },
    /** Stops claiming and waits for the sends under way (each ends within the timeout). */
    async stop() {
      stopped = true;
      clearInterval(timer);
      await passing;
      await Promise.all([...sends]);
    },
  };
}
export type Dispatcher = ReturnType<typeof createDispatcher>;
