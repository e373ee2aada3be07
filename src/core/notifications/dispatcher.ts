import type { Mailer } from '../../integrations/smtp-mailer.js';
import type { WebhookSender } from '../../integrations/webhook-sender.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { WebhookSettings } from '../../model/settings.js';
import { targetOf, type ClaimedNotification, type NotificationRepo } from '../../store/repos/notifications.js';
import { createFairDispatcher, retryOutcome, type Claimed } from '../outbox/fair-dispatcher.js';
import { notificationMessage } from './messages.js';

/** One send at a time per channel of a workspace: notifications arrive in order, and a slow one holds one slot. */
const PER_CHANNEL = 1;

/**
 * Sends the notifications' outbox (notification_deliveries) through the outboxes' fair loop, with the webhooks'
 * timeouts, retries and limits: email to the workspace's members over SMTP, Slack to its incoming webhook (guarded as
 * webhook targets are). Recipients and the Slack URL are read at send time: a member who joined since gets it, a URL
 * removed since is not called. What is logged names the workspace and channel, never an address, URL or password.
 */
export function createNotificationDispatcher(deps: {
  repo: NotificationRepo;
  box: SecretBox;
  mailer: Mailer | undefined;
  slack: WebhookSender;
  settings: WebhookSettings;
  dashboardUrl?: (id: string) => string;
  log: Logger;
  soleProcess?: boolean;
}) {
  const { repo, settings, log } = deps;
  const leaseMs = 2 * settings.timeoutMs + 5000;

  /** Sends one; answers why it failed, or undefined (sent, or nothing left to send it to). */
  async function send(d: ClaimedNotification): Promise<string | undefined> {
    const message = notificationMessage(d.eventType, d.payload, deps.dashboardUrl);
    // Read now: a channel turned off (or a URL removed) since the event was queued is not used.
    const chosen = await repo.settings(d.workspaceId);
    if (d.channel === 'email') {
      const to = chosen?.emailEnabled === false ? [] : await repo.memberEmails(d.workspaceId);
      if (!deps.mailer || to.length === 0) return undefined;
      try {
        await deps.mailer.send({ to, ...message });
        return undefined;
      } catch (err) {
        return (err as Error).message.slice(0, 500);
      }
    }
    const sealed = chosen?.sealedSlackUrl;
    if (!sealed) return undefined;
    const result = await deps.slack.send({
      url: deps.box.open(sealed),
      headers: { 'content-type': 'application/json', 'user-agent': 'Slipway-Notifications/1' },
      body: JSON.stringify({ text: `*${message.subject}*\n${message.text}` }),
    });
    const ok = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    return ok ? undefined : (result.error ?? `Slack answered ${result.statusCode}`);
  }

  async function deliver(d: ClaimedNotification) {
    const error = await send(d);
    const outcome = retryOutcome(error === undefined, d.attempts, d.createdAt, settings);
    if (error !== undefined) {
      const fields = { workspaceId: d.workspaceId, channel: d.channel, eventId: d.eventId, error };
      if (outcome.status === 'failed') log.warn(fields, 'notification given up');
      else log.info({ ...fields, attempts: d.attempts + 1 }, 'notification failed; retrying');
    }
    await repo.finish(d.id, outcome, error ?? null);
  }

  return createFairDispatcher<ClaimedNotification & Claimed>({
    what: 'notification',
    settings,
    log,
    releaseAll: deps.soleProcess ? () => repo.releaseAll() : undefined,
    claim: async ({ limit, busyTargets, busyWorkspaces }) =>
      (
        await repo.claim({
          limit,
          leaseMs,
          perWorkspace: settings.concurrencyPerWorkspace,
          busyTargets,
          busyWorkspaces,
        })
      ).map((d) => ({ ...d, target: targetOf(d.workspaceId, d.channel), perTarget: PER_CHANNEL })),
    deliver,
  });
}
export type NotificationDispatcher = ReturnType<typeof createNotificationDispatcher>;
