import { bigint, index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { LOG_STREAM_SETTINGS } from '../../model/enums.js';
import { createdAt, ts } from './columns.js';
import { workspaces } from './workspaces.js';

/**
 * Render's log streams: a workspace's syslog destination (`preview` says whether preview services' logs go too) and
 * per-resource overrides (their own destination, or `drop`). Tokens are sealed with the secret box. `cursor` is the
 * id of the last log entry the stream handed to its endpoint, so a restart resumes without loss or repeats.
 */
export const logStreams = pgTable('log_streams', {
  workspaceId: text('workspace_id')
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  endpoint: text('endpoint'),
  sealedToken: text('sealed_token'),
  preview: text('preview', { enum: LOG_STREAM_SETTINGS }).notNull(),
  cursor: bigint('cursor', { mode: 'number' }).notNull().default(0),
  createdAt: createdAt(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const logStreamOverrides = pgTable(
  'log_stream_overrides',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** A service or datastore id. */
    resourceId: text('resource_id').notNull(),
    setting: text('setting', { enum: LOG_STREAM_SETTINGS }).notNull(),
    endpoint: text('endpoint'),
    sealedToken: text('sealed_token'),
    cursor: bigint('cursor', { mode: 'number' }).notNull().default(0),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('log_stream_overrides_resource_key').on(t.resourceId),
    index('log_stream_overrides_workspace_idx').on(t.workspaceId, t.id),
  ],
);
