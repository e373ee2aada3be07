import { bigint, boolean, index, integer, jsonb, pgTable, text, type AnyPgColumn } from 'drizzle-orm/pg-core';
import { DATASTORE_KINDS, DATASTORE_STATUSES } from '../../model/enums.js';
import { createdAt, ts } from './columns.js';
import { environments } from './projects.js';
import { workspaces } from './workspaces.js';

// Postgres and key-value datastores.

/**
 * Postgres (`dpg-…`) and key-value (`red-…`) datastores: desired state (status, suspended) plus
 * where the provisioner put it (host, port, provisioner state such as a pid).
 */
export const datastores = pgTable(
  'datastores',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: DATASTORE_KINDS }).notNull(),
    name: text('name').notNull(),
    plan: text('plan').notNull(),
    /** Postgres major version, or the key-value server's version. */
    version: text('version').notNull(),
    environmentId: text('environment_id').references((): AnyPgColumn => environments.id, { onDelete: 'restrict' }),
    /** Which provisioner owns it: local | cluster (postgres) | shared (key-value). */
    provisioner: text('provisioner').notNull(),
    status: text('status', { enum: DATASTORE_STATUSES }).notNull(),
    /** Render's `suspended`: 'suspended' | 'not_suspended'. */
    suspended: boolean('suspended').notNull().default(false),
    databaseName: text('database_name'),
    databaseUser: text('database_user'),
    /** The password sealed with the secret box. */
    sealedPassword: text('sealed_password').notNull(),
    maxmemoryPolicy: text('maxmemory_policy'),
    ipAllowList: jsonb('ip_allow_list')
      .$type<Array<{ cidrBlock: string; description: string }>>()
      .notNull()
      .default([]),
    host: text('host'),
    port: integer('port'),
    /**
     * A Postgres datastore made by point-in-time recovery: the datastore whose backups it is restored from, and the
     * instant (ISO 8601), or `toEnd`: everything a deleted one archived. Its server is made by restoring them, not from
     * an empty cluster.
     */
    restoredFrom: jsonb('restored_from').$type<{ datastoreId: string; time: string; toEnd?: boolean }>(),
    /** What the provisioner needs to find it again (pid, start time, key prefix, ...). */
    provisionerState: jsonb('provisioner_state').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('datastores_workspace_idx').on(t.workspaceId, t.kind, t.id),
    index('datastores_status_idx').on(t.status),
    index('datastores_environment_idx').on(t.environmentId),
  ],
);

/**
 * Deleted Postgres datastores whose backups are kept (docs/datastores.md, "Deleted databases"): the row as it was, so a
 * recovery can copy it, until `backups_until` (the deletion plus the plan's retention), when the backup loop removes the
 * repository and this row.
 */
export const deletedDatastores = pgTable(
  'deleted_datastores',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** The datastore's row when it was deleted (JSON: its dates are strings). */
    row: jsonb('row').$type<Record<string, unknown>>().notNull(),
    deletedAt: ts('deleted_at').notNull().defaultNow(),
    backupsUntil: ts('backups_until').notNull(),
  },
  (t) => [index('deleted_datastores_until_idx').on(t.backupsUntil)],
);

/**
 * `pg_dump` exports of Postgres datastores (Render's `/export`): the file is `<data dir>/exports/<datastore id>/<id>.dump`,
 * kept until `expires_at` (7 days), then removed with its row by the maintenance job.
 */
export const postgresExports = pgTable(
  'postgres_exports',
  {
    id: text('id').primaryKey(),
    datastoreId: text('datastore_id')
      .notNull()
      .references(() => datastores.id, { onDelete: 'cascade' }),
    /** running | done | failed. */
    status: text('status', { enum: ['running', 'done', 'failed'] }).notNull(),
    sizeBytes: bigint('size_bytes', { mode: 'number' }),
    /** Why it failed (pg_dump's last words). */
    error: text('error'),
    createdAt: createdAt(),
    finishedAt: ts('finished_at'),
    /** Renewed while its dump runs: a running export whose heartbeat stopped was cut short (a restart, a crash). */
    heartbeatAt: ts('heartbeat_at').notNull().defaultNow(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    index('postgres_exports_datastore_idx').on(t.datastoreId, t.id),
    index('postgres_exports_expiry_idx').on(t.expiresAt),
  ],
);
