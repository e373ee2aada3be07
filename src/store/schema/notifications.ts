import { sql } from 'drizzle-orm';
import { bigserial, boolean, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { WEBHOOK_DELIVERY_STATUSES } from '../../model/enums.js';
import {
  NOTIFICATION_CHANNELS,
  NOTIFICATIONS_TO_SEND,
  OVERRIDE_PREVIEWS,
  OVERRIDE_TO_SEND,
} from '../../model/notifications.js';
import { createdAt, ts } from './columns.js';
import { services } from './services.js';
import { workspaces } from './workspaces.js';

/**
 * Render's notification settings of a workspace. No row: Render's defaults (email on, failures only, previews off),
 * which the columns' defaults repeat. The Slack incoming webhook's URL is a secret (its path is the credential): sealed.
 */
export const notificationSettings = pgTable('notification_settings', {
  workspaceId: text('workspace_id')
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  emailEnabled: boolean('email_enabled').notNull().default(true),
  previewNotificationsEnabled: boolean('preview_notifications_enabled').notNull().default(false),
  notificationsToSend: text('notifications_to_send', { enum: NOTIFICATIONS_TO_SEND }).notNull().default('failure'),
  sealedSlackUrl: text('sealed_slack_url'),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

/** A service's override of its workspace's settings (Render's; no row: `default` for both). */
export const notificationOverrides = pgTable(
  'notification_overrides',
  {
    serviceId: text('service_id')
      .primaryKey()
      .references(() => services.id, { onDelete: 'cascade' }),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    previewNotificationsEnabled: text('preview_notifications_enabled', { enum: OVERRIDE_PREVIEWS })
      .notNull()
      .default('default'),
    notificationsToSend: text('notifications_to_send', { enum: OVERRIDE_TO_SEND }).notNull().default('default'),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('notification_overrides_workspace_idx').on(t.workspaceId, t.serviceId)],
);

/**
 * The notifications' outbox, as webhook_deliveries is the webhooks': one row per (event, channel), written by the
 * event's own statement, claimed under a lease and retried. A channel of a workspace is a target: one send at a time.
 */
export const notificationDeliveries = pgTable(
  'notification_deliveries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    channel: text('channel', { enum: NOTIFICATION_CHANNELS }).notNull(),
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    /** The event's webhook payload (Render's shape, service name included): the message is written from it. */
    payload: text('payload').notNull(),
    status: text('status', { enum: WEBHOOK_DELIVERY_STATUSES }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    nextAttemptAt: ts('next_attempt_at').notNull().defaultNow(),
    claimedUntil: ts('claimed_until'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('notification_deliveries_event_key').on(t.workspaceId, t.channel, t.eventId),
    index('notification_deliveries_pending_idx')
      .on(t.workspaceId, t.channel, t.nextAttemptAt, t.id)
      .where(sql`status = 'pending'`),
  ],
);
