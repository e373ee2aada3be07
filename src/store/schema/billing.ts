import { index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns.js';
import { workspaces } from './workspaces.js';

// Stripe: each workspace's customer and subscription, the events handled, the meter reports.

/** A workspace's Stripe customer and its subscription as Stripe's webhooks last told it (core/billing/stripe-billing.ts). */
export const billingAccounts = pgTable('billing_accounts', {
  workspaceId: text('workspace_id')
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  customerId: text('customer_id').notNull().unique(),
  subscriptionId: text('subscription_id'),
  /** Stripe's subscription status (active, trialing, past_due, canceled, …); null before any subscription. */
  subscriptionStatus: text('subscription_status'),
  priceId: text('price_id'),
  currentPeriodEnd: ts('current_period_end'),
  /** The `created` time of the Stripe event that set the subscription fields: an older event arriving late is ignored. */
  stateAt: ts('state_at'),
  createdAt: createdAt(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

/** Stripe events already handled, by id: a replayed or redelivered event changes nothing. */
export const billingStripeEvents = pgTable('billing_stripe_events', {
  id: text('id').primaryKey(),
  type: text('type').notNull(),
  receivedAt: ts('received_at').notNull().defaultNow(),
});

/**
 * Usage reported to Stripe's meter: one row per workspace, closed period and resource, written before it is sent.
 * The row's identifier goes with the meter event, so a resend after a crash is the same event to Stripe.
 */
export const billingMeterReports = pgTable(
  'billing_meter_reports',
  {
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    periodStart: ts('period_start').notNull(),
    /** A resource id, or a workspace-wide item (build_minutes, bandwidth). */
    resourceKey: text('resource_key').notNull(),
    identifier: text('identifier').notNull().unique(),
    /** Minor units of the catalog's currency. */
    value: integer('value').notNull(),
    /** pending until Stripe accepted it; zero amounts are never sent. */
    status: text('status', { enum: ['pending', 'sent', 'zero'] }).notNull(),
    reportedAt: ts('reported_at'),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.periodStart, t.resourceKey] }),
    index('billing_meter_reports_pending_idx').on(t.status),
  ],
);
