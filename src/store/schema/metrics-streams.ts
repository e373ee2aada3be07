import { pgTable, text } from 'drizzle-orm/pg-core';
import { METRICS_STREAM_PROVIDERS } from '../../model/enums.js';
import { createdAt, ts } from './columns.js';
import { workspaces } from './workspaces.js';

/** Render's metrics stream: where a workspace's service metrics go (OTLP over HTTP). The token is sealed. */
export const metricsStreams = pgTable('metrics_streams', {
  workspaceId: text('workspace_id')
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  provider: text('provider', { enum: METRICS_STREAM_PROVIDERS }).notNull(),
  url: text('url').notNull(),
  sealedToken: text('sealed_token'),
  createdAt: createdAt(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});
