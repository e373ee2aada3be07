import {
  bigint,
  bigserial,
  boolean,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  type AnyPgColumn,
} from 'drizzle-orm/pg-core';
import type { ServiceDetails } from '../core/services/details.js';
import {
  AUDIT_ACTOR_TYPES,
  AUDIT_STATUSES,
  AUTO_DEPLOY,
  DATASTORE_KINDS,
  DATASTORE_STATUSES,
  DEPLOY_STATUSES,
  DEPLOY_TRIGGERS,
  ENV_VAR_REF_PROPERTIES,
  INSTANCE_STATUSES,
  LOG_TYPES,
  PROTECTED_STATUSES,
  ROLES,
  SERVICE_TYPES,
  USAGE_KINDS,
  type Suspender,
} from './enums.js';

// Timestamps are timestamptz, read back as Date; ids are time-ordered text (lib/ids.ts).
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const createdAt = () => ts('created_at').notNull().defaultNow();

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull(),
    name: text('name').notNull(),
    passwordHash: text('password_hash').notNull(),
    defaultWorkspaceId: text('default_workspace_id').notNull(),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('users_email_key').on(t.email)],
);

export const workspaces = pgTable('workspaces', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  ownerUserId: text('owner_user_id').notNull(),
  createdAt: createdAt(),
});

export const memberships = pgTable(
  'memberships',
  {
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ROLES }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.userId] }), index('memberships_user_idx').on(t.userId)],
);

export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    tokenHash: text('token_hash').notNull(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [uniqueIndex('sessions_token_hash_key').on(t.tokenHash), index('sessions_expires_idx').on(t.expiresAt)],
);

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    tokenHash: text('token_hash').notNull(),
    prefix: text('prefix').notNull(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
    expiresAt: ts('expires_at'),
    lastUsedAt: ts('last_used_at'),
    revokedAt: ts('revoked_at'),
  },
  (t) => [
    uniqueIndex('api_keys_token_hash_key').on(t.tokenHash),
    index('api_keys_workspace_idx').on(t.workspaceId, t.id),
  ],
);

export const invites = pgTable(
  'invites',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    role: text('role', { enum: ROLES }).notNull(),
    tokenHash: text('token_hash').notNull(),
    invitedBy: text('invited_by').notNull(),
    createdAt: createdAt(),
    expiresAt: ts('expires_at').notNull(),
    acceptedAt: ts('accepted_at'),
    acceptedBy: text('accepted_by'),
  },
  (t) => [
    uniqueIndex('invites_token_hash_key').on(t.tokenHash),
    index('invites_workspace_idx').on(t.workspaceId, t.id),
  ],
);

export const auditLogs = pgTable(
  'audit_logs',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id'),
    createdAt: createdAt(),
    event: text('event').notNull(),
    status: text('status', { enum: AUDIT_STATUSES }).notNull(),
    actorType: text('actor_type', { enum: AUDIT_ACTOR_TYPES }).notNull(),
    actorId: text('actor_id'),
    actorEmail: text('actor_email'),
    /** Flat string map (Render's `metadata`): action, target, requestId, ip, method, path, statusCode. */
    metadata: text('metadata').notNull(),
  },
  (t) => [index('audit_logs_workspace_idx').on(t.workspaceId, t.id), index('audit_logs_created_idx').on(t.createdAt)],
);

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    statusCode: integer('status_code'),
    /** The first reply, sealed with the secret box: it may hold a secret shown once. */
    sealedReply: text('sealed_reply'),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index('idempotency_created_idx').on(t.createdAt)],
);

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

export const instances = pgTable(
  'instances',
  {
    id: text('id').primaryKey(),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    deployId: text('deploy_id').notNull(),
    status: text('status', { enum: INSTANCE_STATUSES }).notNull(),
    pid: integer('pid'),
    startTime: text('start_time'),
    port: integer('port'),
    restarts: integer('restarts').notNull().default(0),
    startedAt: ts('started_at'),
    stoppedAt: ts('stopped_at'),
  },
  (t) => [index('instances_service_idx').on(t.serviceId), index('instances_status_idx').on(t.status)],
);

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

/** A reference from an env var to a datastore's connection detail, resolved at deploy time. */
export interface EnvVarRef {
  kind: (typeof DATASTORE_KINDS)[number];
  id: string;
  property: (typeof ENV_VAR_REF_PROPERTIES)[number];
}

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
 * Log entries (Render's log shape): app stdout/stderr, build and pre-deploy output, router
 * requests. `id` is the global insertion order, the resume point of a log stream.
 */
export const logs = pgTable(
  'logs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    workspaceId: text('workspace_id').notNull(),
    /** The service (label `resource`). */
    resourceId: text('resource_id').notNull(),
    instanceId: text('instance_id'),
    deployId: text('deploy_id'),
    type: text('type', { enum: LOG_TYPES }).notNull(),
    level: text('level').notNull(),
    message: text('message').notNull(),
    method: text('method'),
    path: text('path'),
    statusCode: integer('status_code'),
    host: text('host'),
    /** Request duration and bytes sent, for `request` entries. */
    durationMs: doublePrecision('duration_ms'),
    bytes: bigint('bytes', { mode: 'number' }),
    timestamp: ts('timestamp').notNull(),
  },
  (t) => [
    index('logs_resource_time_idx').on(t.resourceId, t.timestamp, t.id),
    index('logs_workspace_time_idx').on(t.workspaceId, t.timestamp, t.id),
    index('logs_time_idx').on(t.timestamp),
  ],
);

/** Where the log collector is in each instance's output files, so a restart neither loses nor repeats lines. */
export const logOffsets = pgTable('log_offsets', {
  /** `<instance id>:stdout` or `<instance id>:stderr`. */
  stream: text('stream').primaryKey(),
  offset: bigint('offset', { mode: 'number' }).notNull(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

/** Message bytes stored per service, kept by the writes and deletes of logs (the per-service cap reads this, not the table). */
export const logSizes = pgTable('log_sizes', {
  resourceId: text('resource_id').primaryKey(),
  bytes: bigint('bytes', { mode: 'number' }).notNull(),
});

/**
 * CPU and memory samples per instance; `resolution` 0 = raw samples, 60 / 3600 = roll-ups
 * (averages, with max and min) made when raw samples expire.
 */
export const metricSamples = pgTable(
  'metric_samples',
  {
    serviceId: text('service_id').notNull(),
    instanceId: text('instance_id').notNull(),
    resolution: integer('resolution').notNull().default(0),
    timestamp: ts('timestamp').notNull(),
    /** Percent of one core. */
    cpuPercent: doublePrecision('cpu_percent').notNull(),
    cpuMax: doublePrecision('cpu_max'),
    cpuMin: doublePrecision('cpu_min'),
    /** RSS of the whole process tree. */
    memoryBytes: bigint('memory_bytes', { mode: 'number' }).notNull(),
    memoryMax: bigint('memory_max', { mode: 'number' }),
    memoryMin: bigint('memory_min', { mode: 'number' }),
    /** The instance cgroup's memory.current, where cgroups are available. */
    cgroupMemoryBytes: bigint('cgroup_memory_bytes', { mode: 'number' }),
  },
  (t) => [
    primaryKey({ columns: [t.instanceId, t.resolution, t.timestamp] }),
    index('metric_samples_service_idx').on(t.serviceId, t.resolution, t.timestamp),
  ],
);

/**
 * The usage ledger, append-only: one row per metered stretch of a source (an instance's
 * running time, a build, a service's router bytes, a datastore's serving time). A stretch
 * starts where the source's previous one ended (unique on source, kind and start), so
 * metering again after a crash can neither skip nor double-count.
 */
export const usageEntries = pgTable(
  'usage_entries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    workspaceId: text('workspace_id').notNull(),
    /** The service or datastore billed. */
    resourceId: text('resource_id').notNull(),
    /** What was metered: an instance, deploy (build), service (bandwidth) or datastore id. */
    sourceId: text('source_id').notNull(),
    kind: text('kind', { enum: USAGE_KINDS }).notNull(),
    plan: text('plan').notNull(),
    quantity: doublePrecision('quantity').notNull(),
    startedAt: ts('started_at').notNull(),
    endedAt: ts('ended_at').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('usage_entries_source_key').on(t.sourceId, t.kind, t.startedAt),
    index('usage_entries_workspace_idx').on(t.workspaceId, t.endedAt),
  ],
);
