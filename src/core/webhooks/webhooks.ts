import { AppError, conflict, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { isPublicAddress, literalAddress } from '../../lib/ip-ranges.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { ListWindow } from '../../store/repos/filters.js';
import type { AttemptQuery, WebhookRepo, WebhookRow } from '../../store/repos/webhooks.js';
import { newSecret } from './signing.js';

export interface WebhookInput {
  name: string;
  url: string;
  enabled: boolean;
  eventFilter: string[];
}
export interface WebhookView {
  webhook: WebhookRow;
  secret: string;
}

/** Test pings a webhook keeps pending (queued or retrying): a new one drops the oldest that is not being sent. */
export const TEST_PINGS_KEPT = 5;

/** How long the secret before a rotation still signs. */
export const PREVIOUS_SECRET_MS = 24 * 3600_000;

const invalid = (message: string, field: string) => new AppError('validation_failed', message, [{ field, message }]);

/** A target a webhook may have: http(s), no credentials, and no literal private or reserved address (unless allowed). */
export function checkUrl(raw: string, allowPrivate: boolean, field = 'url'): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(`"${raw}" is not a URL`, field);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('the URL must be http or https', field);
  if (url.username || url.password) throw invalid('the URL must not carry credentials', field);
  const literal = literalAddress(url.hostname);
  if (literal && !allowPrivate && !isPublicAddress(literal))
    throw invalid(`${literal} is a private or reserved address: webhooks only reach public addresses`, field);
  return url.toString();
}

/** Webhooks of a workspace: CRUD, secrets (sealed at rest, rotated with a day's overlap), the test ping and the log. */
export function createWebhooks(deps: {
  repo: WebhookRepo;
  box: SecretBox;
  allowPrivate: boolean;
  /** At most this many webhooks per workspace: an event is queued once per webhook, so more would multiply the outbox. */
  perWorkspace: number;
  /** Wakes the dispatcher (a ping was queued). */
  poke?: () => void;
}) {
  const { repo, box } = deps;
  const view = (webhook: WebhookRow): WebhookView => ({ webhook, secret: box.open(webhook.sealedSecret) });
  return {
    view,
    async get(id: string): Promise<WebhookRow> {
      const row = await repo.get(id);
      if (!row) throw notFound('webhook');
      return row;
    },
    list: (q: ListWindow & { workspaceIds?: string[] }) => repo.list(q),
    async create(workspaceId: string, input: WebhookInput): Promise<WebhookView> {
      if ((await repo.countIn(workspaceId)) >= deps.perWorkspace)
        throw conflict(
          `this workspace already has ${deps.perWorkspace} webhooks, the most it may have (SLIPWAY_WEBHOOKS_PER_WORKSPACE); delete one first`,
        );
      const row = await repo.insert({
        id: newId('webhook'),
        workspaceId,
        name: input.name,
        url: checkUrl(input.url, deps.allowPrivate),
        enabled: input.enabled,
        eventFilter: [...new Set(input.eventFilter)],
        sealedSecret: box.seal(newSecret()),
      });
      return view(row);
    },
    async update(webhook: WebhookRow, patch: Partial<WebhookInput>): Promise<WebhookView> {
      const row = await repo.update(webhook.id, {
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.url !== undefined ? { url: checkUrl(patch.url, deps.allowPrivate) } : {}),
        // Re-enabling starts a fresh failing streak.
        ...(patch.enabled !== undefined ? { enabled: patch.enabled, failingSince: null } : {}),
        ...(patch.eventFilter !== undefined ? { eventFilter: [...new Set(patch.eventFilter)] } : {}),
      });
      if (!row) throw notFound('webhook');
      return view(row);
    },
    async remove(webhook: WebhookRow): Promise<void> {
      await repo.delete(webhook.id);
    },
    /** A new secret; the old one keeps signing (alongside) for PREVIOUS_SECRET_MS, so receivers can switch over. */
    async rotateSecret(webhook: WebhookRow, now = new Date()): Promise<WebhookView> {
      const row = await repo.update(webhook.id, {
        sealedSecret: box.seal(newSecret()),
        sealedPreviousSecret: webhook.sealedSecret,
        previousSecretExpiresAt: new Date(now.getTime() + PREVIOUS_SECRET_MS),
      });
      if (!row) throw notFound('webhook');
      return view(row);
    },
    /**
     * Queues a `webhook_test` delivery through the outbox, like any event; answers its id (the webhook-id header). Past
     * TEST_PINGS_KEPT pending pings, the oldest not being sent is dropped.
     */
    async sendTest(webhook: WebhookRow, now = new Date()): Promise<string> {
      const id = newId('event');
      const payload = { type: 'webhook_test', timestamp: now.toISOString(), data: { id, webhookId: webhook.id } };
      await repo.enqueueTest({ webhookId: webhook.id, eventId: id, payload: JSON.stringify(payload) }, TEST_PINGS_KEPT);
      deps.poke?.();
      return id;
    },
    attempts: (webhook: WebhookRow, q: AttemptQuery) => repo.listAttempts(webhook.id, q),
  };
}
export type Webhooks = ReturnType<typeof createWebhooks>;

/** The secrets that sign now: the current one, and the previous one until it expires. */
export function signingSecrets(
  webhook: Pick<WebhookRow, 'sealedSecret' | 'sealedPreviousSecret' | 'previousSecretExpiresAt'>,
  box: SecretBox,
  now = new Date(),
): string[] {
  const secrets = [box.open(webhook.sealedSecret)];
  if (webhook.sealedPreviousSecret && webhook.previousSecretExpiresAt && webhook.previousSecretExpiresAt > now)
    secrets.push(box.open(webhook.sealedPreviousSecret));
  return secrets;
}
