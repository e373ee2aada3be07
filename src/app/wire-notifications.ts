import type { Config } from './config.js';
import { createNotificationDispatcher } from '../core/notifications/dispatcher.js';
import { createNotificationSettings } from '../core/notifications/settings.js';
import { createHttpSender } from '../integrations/webhook-sender.js';
import { createSmtpMailer } from '../integrations/smtp-mailer.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { Repos } from '../store/repos/index.js';

/** The Slack answer kept (nothing reads it but the status). */
const SLACK_RESPONSE_BYTES = 512;

/**
 * Notifications (docs/notifications.md): the API's settings now, the dispatcher at `start`. `poke` is handed to the
 * events outbox before the dispatcher runs; it wakes it once it is.
 */
export function wireNotifications(deps: {
  config: Config;
  repos: Pick<Repos, 'notifications'>;
  box: SecretBox;
  dashboardUrl: (id: string) => string;
}) {
  const { config } = deps;
  let dispatcher: ReturnType<typeof createNotificationDispatcher> | undefined;
  return {
    poke: () => dispatcher?.poke(),
    /** SMTP is set: email notifications are queued. */
    emailConfigured: Boolean(config.notifications.smtpUrl),
    settings: createNotificationSettings({
      repo: deps.repos.notifications,
      box: deps.box,
      allowPrivate: config.webhooks.allowPrivate,
    }),
    /** Starts delivering; returns the stop. */
    async start(parts: { log: Logger; soleProcess: boolean }) {
      const { smtpUrl, from } = config.notifications;
      const started = createNotificationDispatcher({
        repo: deps.repos.notifications,
        box: deps.box,
        mailer: smtpUrl ? createSmtpMailer({ smtpUrl, from, timeoutMs: config.webhooks.timeoutMs }) : undefined,
        slack: createHttpSender({
          timeoutMs: config.webhooks.timeoutMs,
          maxResponseBytes: SLACK_RESPONSE_BYTES,
          allowPrivate: config.webhooks.allowPrivate,
        }),
        settings: config.webhooks,
        dashboardUrl: deps.dashboardUrl,
        ...parts,
      });
      dispatcher = started;
      await started.start();
      return () => started.stop();
    },
  };
}
export type NotificationsWiring = ReturnType<typeof wireNotifications>;
