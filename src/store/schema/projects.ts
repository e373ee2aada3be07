import { boolean, index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { PROTECTED_STATUSES } from '../../model/enums.js';
import { createdAt, ts } from './columns.js';
import { workspaces } from './workspaces.js';

// Projects and their environments.

export const projects = pgTable(
  'projects',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('projects_workspace_idx').on(t.workspaceId, t.id)],
);

export const environments = pgTable(
  'environments',
  {
    id: text('id').primaryKey(),
    projectId: text('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    protectedStatus: text('protected_status', { enum: PROTECTED_STATUSES }).notNull().default('unprotected'),
    networkIsolationEnabled: boolean('network_isolation_enabled').notNull().default(false),
    ipAllowList: jsonb('ip_allow_list')
      .$type<Array<{ cidrBlock: string; description: string }>>()
      .notNull()
      .default([]),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('environments_project_name_key').on(t.projectId, t.name),
    index('environments_workspace_idx').on(t.workspaceId, t.id),
  ],
);
