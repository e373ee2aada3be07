import { boolean, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { DEPLOY_STATUSES, DEPLOY_TRIGGERS, INSTANCE_KINDS, INSTANCE_STATUSES } from '../../model/enums.js';
import { PLANS } from '../../model/services.js';
import { createdAt, ts } from './columns.js';
import { services } from './services.js';

// Deploys and the instances they run.

export const deploys = pgTable(
  'deploys',
  {
    id: text('id').primaryKey(),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    status: text('status', { enum: DEPLOY_STATUSES }).notNull(),
    trigger: text('trigger', { enum: DEPLOY_TRIGGERS }).notNull(),
    sourceId: text('source_id'),
    /** Rollbacks reuse this deploy's artifact instead of building. */
    artifactOf: text('artifact_of'),
    commitId: text('commit_id'),
    commitMessage: text('commit_message'),
    clearCache: boolean('clear_cache').notNull().default(false),
    /** What the deploy runs, frozen at build time so a rollback starts exactly that. */
    startCommand: text('start_command'),
    /** What its build ran with, and so its instances run with (a Node.js release, a virtualenv); frozen likewise. */
    toolchain: jsonb('toolchain').$type<DeployToolchain>(),
    buildOutput: text('build_output'),
    failureReason: text('failure_reason'),
    artifactDeleted: boolean('artifact_deleted').notNull().default(false),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
  },
  (t) => [index('deploys_service_idx').on(t.serviceId, t.id), index('deploys_status_idx').on(t.status)],
);

/** A deploy's language runtimes beyond the host's (docs/deploys.md, "Runtime versions"); paths are the artifact's. */
export interface DeployToolchain {
  /** The Node.js release the build ran on, first on the instances' PATH; absent: the host's Node. */
  node?: string;
  /** The Python the build's virtualenv was made with (`3.11.2`). */
  python?: string;
  /** The virtualenv the build installed into, relative to the artifact: the instances' VIRTUAL_ENV. */
  venv?: string;
  /** Corepack's downloads the build used (yarn, pnpm), relative to the artifact: the instances' COREPACK_HOME. */
  corepackHome?: string;
  /**
   * A container's image (docker and image runtimes, docs/containers.md): the tag that names it in the service's storage
   * (this deploy's, so rollback restarts exactly it), the image's id, and for a pulled image what its reference said
   * and the manifest digest that reference resolved to.
   */
  image?: { tag: string; id: string; ref?: string; digest?: string };
}

export const instances = pgTable(
  'instances',
  {
    id: text('id').primaryKey(),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    deployId: text('deploy_id').notNull(),
    status: text('status', { enum: INSTANCE_STATUSES }).notNull(),
    /** A deploy's instance, a cron run or a one-off job: only instances are routed, supervised and rolled over. */
    kind: text('kind', { enum: INSTANCE_KINDS }).notNull().default('instance'),
    /** The plan it runs (and is metered) on, where not its service's: a one-off job's `planId`. */
    plan: text('plan', { enum: PLANS }),
    pid: integer('pid'),
    startTime: text('start_time'),
    port: integer('port'),
    restarts: integer('restarts').notNull().default(0),
    startedAt: ts('started_at'),
    stoppedAt: ts('stopped_at'),
  },
  (t) => [index('instances_service_idx').on(t.serviceId), index('instances_status_idx').on(t.status)],
);
