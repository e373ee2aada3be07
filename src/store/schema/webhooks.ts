import { sql } from 'drizzle-orm';
import { bigserial, boolean, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { WEBHOOK_DELIVERY_STATUSES } from '../../model/enums.js';
import { createdAt, ts } from './columns.js';
import { workspaces } from './workspaces.js';

// Render's webhooks: endpoints, deliveries (the outbox) and their attempts.

/** Render's webhooks: where a workspace's events are POSTed, signed with a secret sealed at rest. */
export const webhooks = pgTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    url: text('url').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    /** Webhook event types (store/enums.ts WEBHOOK_EVENT_TYPES); empty = all. */
    eventFilter: text('event_filter').array().notNull().default([]),
    sealedSecret: text('sealed_secret').notNull(),
    /** The secret before the last rotation: it still signs until `previousSecretExpiresAt`. */
    sealedPreviousSecret: text('sealed_previous_secret'),
    previousSecretExpiresAt: ts('previous_secret_expires_at'),
    /** The first failed attempt since the last success: sustained failure disables the webhook. */
    failingSince: ts('failing_since'),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('webhooks_workspace_idx').on(t.workspaceId, t.id)],
);

/**
 * The outbox: one row per (event, webhook), written by the same statement as the event, with the body to send.
 * Dispatchers claim due rows (`claimed_until`, a lease) and retry them until they succeed or give up.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    webhookId: text('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    /** The event's id, also the `webhook-id` header: the same on every attempt. */
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    payload: text('payload').notNull(),
    status: text('status', { enum: WEBHOOK_DELIVERY_STATUSES }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull().defaultNow(),
    claimedUntil: ts('claimed_until'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('webhook_deliveries_event_key').on(t.webhookId, t.eventId),
    index('webhook_deliveries_due_idx').on(t.status, t.nextAttemptAt),
    // The claim walks the webhooks with pending rows and takes each one's first due rows (repos/webhooks.ts `claim`).
    index('webhook_deliveries_pending_idx')
      .on(t.webhookId, t.nextAttemptAt, t.id)
      .where(sql`status = 'pending'`),
  ],
);

/** Every attempt of a delivery: Render's webhook events, the delivery log. */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: text('id').primaryKey(),
    webhookId: text('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    sentAt: ts('sent_at').notNull(),
    statusCode: integer('status_code'),
    durationMs: integer('duration_ms').notNull(),
    error: text('error'),
    /** The first 4 KiB of the response body. */
    responseBody: text('response_body'),
  },
  (t) => [index('webhook_attempts_webhook_idx').on(t.webhookId, t.id)],
);
