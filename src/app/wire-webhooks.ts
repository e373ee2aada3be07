import type { Config } from './config.js';
import type { AuditLog } from '../core/audit.js';
import type { Events } from '../core/events.js';
import { createDispatcher, RESPONSE_BODY_BYTES, type Dispatcher } from '../core/webhooks/dispatcher.js';
import { createWebhooks } from '../core/webhooks/webhooks.js';
import { createHttpSender } from '../integrations/webhook-sender.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { Repos } from '../store/repos/index.js';

/**
 * Webhooks: the API's view now, and the dispatcher once events and the audit log exist (`start`). `poke` is handed to
 * whatever queues deliveries (the events outbox) before the dispatcher is running; it wakes it once it is.
 */
export function wireWebhooks(deps: { config: Config; repos: Pick<Repos, 'webhooks'>; box: SecretBox }) {
  const { config } = deps;
  let dispatcher: Dispatcher | undefined;
  const poke = () => dispatcher?.poke();
  return {
    poke,
    webhooks: createWebhooks({
      repo: deps.repos.webhooks,
      box: deps.box,
      allowPrivate: config.webhooks.allowPrivate,
      perWorkspace: config.webhooks.perWorkspace,
      poke,
    }),
    /** Starts delivering; returns the stop. */
    async start(parts: { events: Events; audit: AuditLog; log: Logger; soleProcess: boolean }) {
      const sender = createHttpSender({
        timeoutMs: config.webhooks.timeoutMs,
        maxResponseBytes: RESPONSE_BODY_BYTES,
        allowPrivate: config.webhooks.allowPrivate,
      });
      const started = createDispatcher({
        repo: deps.repos.webhooks,
        box: deps.box,
        sender,
        settings: config.webhooks,
        ...parts,
      });
      dispatcher = started;
      await started.start();
      return () => started.stop();
    },
  };
}
