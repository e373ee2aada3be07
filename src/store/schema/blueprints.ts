import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { BLUEPRINT_STATUSES, BLUEPRINT_SYNC_STATES } from '../../model/enums.js';
import { createdAt, ts } from './columns.js';
import { workspaces } from './workspaces.js';

// Blueprints, their syncs and the resources they manage.

/** Blueprints: a render.yaml in a repo or an uploaded archive, synced into the workspace's resources. */
export const blueprints = pgTable(
  'blueprints',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Render's status: created | paused | in_sync | syncing | error (BLUEPRINT_STATUSES). */
    status: text('status', { enum: BLUEPRINT_STATUSES }).notNull().default('created'),
    autoSync: boolean('auto_sync').notNull().default(true),
    repo: text('repo'),
    branch: text('branch'),
    path: text('path').notNull().default('render.yaml'),
    /** The latest uploaded archive (an upload blueprint), its SHA-256 beside it. */
    archiveId: text('archive_id'),
    archiveSha256: text('archive_sha256'),
    lastSyncId: text('last_sync_id'),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('blueprints_workspace_name_key').on(t.workspaceId, t.name),
    index('blueprints_workspace_idx').on(t.workspaceId, t.id),
  ],
);

/** One sync of a blueprint; at most one running per blueprint (the partial unique index). */
export const blueprintSyncs = pgTable(
  'blueprint_syncs',
  {
    id: text('id').primaryKey(),
    blueprintId: text('blueprint_id')
      .notNull()
      .references(() => blueprints.id, { onDelete: 'cascade' }),
    /** running | succeeded | failed (BLUEPRINT_SYNC_STATES). */
    state: text('state', { enum: BLUEPRINT_SYNC_STATES }).notNull().default('running'),
    /** The commit or the archive's SHA-256 the file was read from. */
    commitId: text('commit_id'),
    error: text('error'),
    /** Per resource: what the sync did (core/blueprints/sync.ts SyncResult). */
    results: jsonb('results').$type<unknown[]>().notNull().default([]),
    /** A running sync's pulse: one whose pulse stopped (its process died) is failed by the next (core/blueprints). */
    heartbeatAt: ts('heartbeat_at').notNull().defaultNow(),
    startedAt: ts('started_at').notNull().defaultNow(),
    finishedAt: ts('finished_at'),
  },
  (t) => [
    index('blueprint_syncs_blueprint_idx').on(t.blueprintId, t.id),
    uniqueIndex('blueprint_syncs_running_key')
      .on(t.blueprintId)
      .where(sql`state = 'running'`),
  ],
);

/** The resources a blueprint manages: kind (service | postgres | keyValue | envGroup | project) and id. */
export const blueprintResources = pgTable(
  'blueprint_resources',
  {
    resourceId: text('resource_id').primaryKey(),
    blueprintId: text('blueprint_id')
      .notNull()
      .references(() => blueprints.id, { onDelete: 'cascade' }),
    kind: text('kind').notNull(),
    name: text('name').notNull(),
  },
  (t) => [index('blueprint_resources_blueprint_idx').on(t.blueprintId)],
);
