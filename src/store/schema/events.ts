import { index, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt } from './columns.js';

// Service, deploy and datastore events: the feed webhooks and the dashboard read.

export const events = pgTable(
  'events',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id').notNull(),
    serviceId: text('service_id'),
    deployId: text('deploy_id'),
    /** Set instead of serviceId for a datastore's events. */
    datastoreId: text('datastore_id'),
    type: text('type').notNull(),
    details: jsonb('details').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [
    index('events_service_idx').on(t.serviceId, t.id),
    index('events_workspace_idx').on(t.workspaceId, t.id),
    index('events_datastore_idx').on(t.datastoreId, t.id),
  ],
);
