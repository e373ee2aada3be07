import { bigint, index, jsonb, pgTable, text, uniqueIndex, type AnyPgColumn } from 'drizzle-orm/pg-core';
import { AUTO_DEPLOY, SERVICE_TYPES, type Suspender } from '../../model/enums.js';
import type { ServiceDetails } from '../../model/services.js';
import { createdAt, ts } from './columns.js';
import { environments } from './projects.js';
import { workspaces } from './workspaces.js';

// Services and what gives them new code: uploaded sources, deploy hooks, the git poller's heads.

export const services = pgTable(
  'services',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Unique across Slipway: the app answers at `<slug>.<apps domain>`. */
    slug: text('slug').notNull(),
    type: text('type', { enum: SERVICE_TYPES }).notNull(),
    repo: text('repo'),
    branch: text('branch'),
    rootDir: text('root_dir').notNull().default(''),
    autoDeploy: text('auto_deploy', { enum: AUTO_DEPLOY }).notNull(),
    environmentId: text('environment_id').references((): AnyPgColumn => environments.id, { onDelete: 'restrict' }),
    /** The type's settings (runtime, plan, commands, ...), as core/services/details.ts merges and checks them. */
    details: jsonb('details').$type<ServiceDetails>().notNull(),
    /** Render's `suspenders`: empty when running. */
    suspenders: jsonb('suspenders').$type<Suspender[]>().notNull().default([]),
    liveDeployId: text('live_deploy_id'),
    /** What its artifacts, uploads and build disk take on the host's disk, hard links once (measured after each deploy). */
    diskBytes: bigint('disk_bytes', { mode: 'number' }).notNull().default(0),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('services_slug_key').on(t.slug),
    uniqueIndex('services_workspace_name_key').on(t.workspaceId, t.name),
    index('services_workspace_idx').on(t.workspaceId, t.id),
    index('services_environment_idx').on(t.environmentId),
  ],
);

export const sources = pgTable(
  'sources',
  {
    id: text('id').primaryKey(),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    sha256: text('sha256').notNull(),
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('sources_service_idx').on(t.serviceId, t.id)],
);

/** A service's deploy hook (Render's secret deploy URL): its key is kept as a SHA-256 digest, shown once. */
export const deployHooks = pgTable('deploy_hooks', {
  serviceId: text('service_id')
    .primaryKey()
    .references(() => services.id, { onDelete: 'cascade' }),
  keyHash: text('key_hash').notNull(),
  /** The key's last characters, so a user can tell which key is current. */
  keyHint: text('key_hint').notNull(),
  createdAt: createdAt(),
});

/** The newest commit the git poller saw on a service's repo and branch (core/deploys/git-poller.ts). */
export const gitHeads = pgTable('git_heads', {
  serviceId: text('service_id')
    .primaryKey()
    .references(() => services.id, { onDelete: 'cascade' }),
  /** `<repo>#<branch>` the commit was read from: a changed repo or branch starts over. */
  source: text('source').notNull(),
  commitId: text('commit_id').notNull(),
  checkedAt: ts('checked_at').notNull().defaultNow(),
});
