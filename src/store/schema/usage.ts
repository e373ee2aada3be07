import { bigint, bigserial, doublePrecision, index, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { USAGE_KINDS } from '../../model/enums.js';
import { createdAt, ts } from './columns.js';

// The usage ledger and its hourly and daily roll-ups.

/**
 * The usage ledger, append-only: one row per metered stretch of a source (an instance's
 * running time, a build, a service's router bytes, a datastore's serving time). A stretch
 * starts where the source's previous one ended (unique on source, kind and start), so
 * metering again after a crash can neither skip nor double-count.
 */
export const usageEntries = pgTable(
  'usage_entries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    workspaceId: text('workspace_id').notNull(),
    /** The service or datastore billed. */
    resourceId: text('resource_id').notNull(),
    /** What was metered: an instance, deploy (build), service (bandwidth) or datastore id. */
    sourceId: text('source_id').notNull(),
    kind: text('kind', { enum: USAGE_KINDS }).notNull(),
    plan: text('plan').notNull(),
    quantity: doublePrecision('quantity').notNull(),
    startedAt: ts('started_at').notNull(),
    endedAt: ts('ended_at').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('usage_entries_source_key').on(t.sourceId, t.kind, t.startedAt),
    index('usage_entries_workspace_idx').on(t.workspaceId, t.endedAt),
  ],
);

/**
 * The usage ledger summed per UTC hour (store/repos/usage-rollups.ts): reports read whole hours here. Rolled up by the
 * usage meter from the entries after `usage_rollups.last_id`.
 */
export const usageHourly = pgTable(
  'usage_hourly',
  {
    workspaceId: text('workspace_id').notNull(),
    hour: ts('hour').notNull(),
    resourceId: text('resource_id').notNull(),
    kind: text('kind', { enum: USAGE_KINDS }).notNull(),
    plan: text('plan').notNull(),
    quantity: doublePrecision('quantity').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.hour, t.resourceId, t.kind, t.plan] })],
);

/** The same sums per UTC day: a month's report reads its whole days here, and hours only for its first and last day. */
export const usageDaily = pgTable(
  'usage_daily',
  {
    workspaceId: text('workspace_id').notNull(),
    day: ts('day').notNull(),
    resourceId: text('resource_id').notNull(),
    kind: text('kind', { enum: USAGE_KINDS }).notNull(),
    plan: text('plan').notNull(),
    quantity: doublePrecision('quantity').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.day, t.resourceId, t.kind, t.plan] })],
);

/** How far the roll-up has read the usage ledger: the last entry id it added (to the hours and days together). */
export const usageRollups = pgTable('usage_rollups', {
  name: text('name').primaryKey(),
  lastId: bigint('last_id', { mode: 'number' }).notNull(),
});
