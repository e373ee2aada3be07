import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { REGISTRY_CREDENTIAL_REGISTRIES } from '../../model/enums.js';
import { createdAt, ts } from './columns.js';
import { workspaces } from './workspaces.js';

/**
 * Render's registry credentials: what a workspace's image pulls and Dockerfile builds sign in to a private registry
 * with. The token is sealed with the secret box (AES-256-GCM) and never leaves core unopened.
 */
export const registryCredentials = pgTable(
  'registry_credentials',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** Once per workspace: a blueprint names a credential (`fromRegistryCreds: {name}`). */
    name: text('name').notNull(),
    registry: text('registry', { enum: REGISTRY_CREDENTIAL_REGISTRIES }).notNull(),
    username: text('username').notNull(),
    sealedToken: text('sealed_token').notNull(),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('registry_credentials_workspace_name_key').on(t.workspaceId, t.name),
    index('registry_credentials_workspace_idx').on(t.workspaceId, t.id),
  ],
);
