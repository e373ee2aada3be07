import { index, jsonb, pgTable, primaryKey, text, uniqueIndex, type AnyPgColumn } from 'drizzle-orm/pg-core';
import { DATASTORE_KINDS, ENV_VAR_REF_PROPERTIES } from '../../model/enums.js';
import { createdAt, ts } from './columns.js';
import { environments } from './projects.js';
import { services } from './services.js';
import { workspaces } from './workspaces.js';

// A service's environment: its own variables and the env groups it links.

export const envVars = pgTable(
  'env_vars',
  {
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    /** The value sealed with the secret box (AES-256-GCM); empty when `ref` is set. */
    sealedValue: text('sealed_value').notNull(),
    /** `fromDatabase` / `fromKeyValue`: resolved when a deploy or restart builds the environment. */
    ref: jsonb('ref').$type<EnvVarRef>(),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.serviceId, t.key] })],
);

/** A reference from an env var to a datastore's connection detail, resolved at deploy time. */
export interface EnvVarRef {
  kind: (typeof DATASTORE_KINDS)[number];
  id: string;
  property: (typeof ENV_VAR_REF_PROPERTIES)[number];
}

export const envGroups = pgTable(
  'env_groups',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    environmentId: text('environment_id').references((): AnyPgColumn => environments.id, { onDelete: 'restrict' }),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('env_groups_workspace_name_key').on(t.workspaceId, t.name),
    index('env_groups_workspace_idx').on(t.workspaceId, t.id),
    index('env_groups_environment_idx').on(t.environmentId),
  ],
);

export const envGroupVars = pgTable(
  'env_group_vars',
  {
    groupId: text('group_id')
      .notNull()
      .references(() => envGroups.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    /** The value sealed with the secret box (AES-256-GCM); empty when `ref` is set. */
    sealedValue: text('sealed_value').notNull(),
    ref: jsonb('ref').$type<EnvVarRef>(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.key] })],
);

/** A service's linked groups; `linkedAt` orders them (later links win on the same key). */
export const envGroupLinks = pgTable(
  'env_group_links',
  {
    groupId: text('group_id')
      .notNull()
      .references(() => envGroups.id, { onDelete: 'cascade' }),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    linkedAt: ts('linked_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.serviceId] }), index('env_group_links_service_idx').on(t.serviceId)],
);

/** A service's own secret files (Render's secretFile), mounted at /etc/secrets/<name> in its instances. */
export const secretFiles = pgTable(
  'secret_files',
  {
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** The content sealed with the secret box (AES-256-GCM), as env var values are. */
    sealedContent: text('sealed_content').notNull(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.serviceId, t.name] })],
);

/** An env group's secret files; a service's own file of the same name wins over them. */
export const envGroupSecretFiles = pgTable(
  'env_group_secret_files',
  {
    groupId: text('group_id')
      .notNull()
      .references(() => envGroups.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** The content sealed with the secret box (AES-256-GCM). */
    sealedContent: text('sealed_content').notNull(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.name] })],
);
