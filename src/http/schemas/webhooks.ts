import { Type } from '@sinclair/typebox';
import type { WebhookView } from '../../core/webhooks/webhooks.js';
import type { WebhookAttemptRow } from '../../store/repos/webhooks.js';
import { WEBHOOK_EVENT_TYPES } from '../../model/enums.js';
import { literalUnion, Timestamp } from './common.js';

export const WebhookEventType = literalUnion(WEBHOOK_EVENT_TYPES);
export const EventFilter = Type.Array(WebhookEventType, {
  maxItems: WEBHOOK_EVENT_TYPES.length,
  description: 'The event types sent to this webhook; empty: all of them',
});

/** Render's `webhook` (the body carries the signing secret: admins and owners only). */
export const WebhookBody = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    name: Type.String(),
    secret: Type.String({ description: 'Standard Webhooks signing secret (whsec_…)' }),
    enabled: Type.Boolean(),
    eventFilter: EventFilter,
  },
  { title: 'webhook' },
);
export const webhookBody = ({ webhook, secret }: WebhookView) => ({
  id: webhook.id,
  url: webhook.url,
  name: webhook.name,
  secret,
  enabled: webhook.enabled,
  eventFilter: webhook.eventFilter as (typeof WEBHOOK_EVENT_TYPES)[number][],
});

/** Render's `webhookEvent`: one delivery attempt (Slipway adds its duration). */
export const WebhookEventBody = Type.Object(
  {
    id: Type.String(),
    eventId: Type.String(),
    eventType: Type.String(),
    sentAt: Timestamp,
    statusCode: Type.Optional(Type.Integer()),
    responseBody: Type.Optional(Type.String({ description: 'The first 4 KiB of the response body' })),
    error: Type.Optional(Type.String({ description: 'Why there was no response (timeout, refused address, …)' })),
    durationMs: Type.Integer(),
  },
  { title: 'webhookEvent' },
);
export const webhookEventBody = (a: WebhookAttemptRow) => ({
  id: a.id,
  eventId: a.eventId,
  eventType: a.eventType,
  sentAt: a.sentAt.toISOString(),
  ...(a.statusCode !== null ? { statusCode: a.statusCode } : {}),
  ...(a.responseBody !== null ? { responseBody: a.responseBody } : {}),
  ...(a.error !== null ? { error: a.error } : {}),
  durationMs: a.durationMs,
});
