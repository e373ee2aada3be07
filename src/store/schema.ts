import { sql } from 'drizzle-orm';
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
import type { ServiceDetails } from '../model/services.js';
import {
  AUDIT_ACTOR_TYPES,
  AUDIT_STATUSES,
  AUTO_DEPLOY,
  BLUEPRINT_STATUSES,
  BLUEPRINT_SYNC_STATES,
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
  WEBHOOK_DELIVERY_STATUSES,
  type Suspender,
} from '../model/enums.js';

// Timestamps are timestamptz, read back as Date; ids are time-ordered text (lib/ids.ts).
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const createdAt = () => ts('created_at').notNull().defaultNow();

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull(),
    name: text('name').notNull(),
    /** Null for an account made by an OAuth sign-in, until a password is set. */
    passwordHash: text('password_hash'),
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
}

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

/** Render's webhooks: where a workspace's events are POSTed, signed with a secret sealed at rest. */
export const webhooks = pgTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    url: text('url').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    /** Webhook event types (store/enums.ts WEBHOOK_EVENT_TYPES); empty = all. */
    eventFilter: text('event_filter').array().notNull().default([]),
    sealedSecret: text('sealed_secret').notNull(),
    /** The secret before the last rotation: it still signs until `previousSecretExpiresAt`. */
    sealedPreviousSecret: text('sealed_previous_secret'),
    previousSecretExpiresAt: ts('previous_secret_expires_at'),
    /** The first failed attempt since the last success: sustained failure disables the webhook. */
    failingSince: ts('failing_since'),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('webhooks_workspace_idx').on(t.workspaceId, t.id)],
);

/**
 * The outbox: one row per (event, webhook), written by the same statement as the event, with the body to send.
 * Dispatchers claim due rows (`claimed_until`, a lease) and retry them until they succeed or give up.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    webhookId: text('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    /** The event's id, also the `webhook-id` header: the same on every attempt. */
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    payload: text('payload').notNull(),
    status: text('status', { enum: WEBHOOK_DELIVERY_STATUSES }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull().defaultNow(),
    claimedUntil: ts('claimed_until'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('webhook_deliveries_event_key').on(t.webhookId, t.eventId),
    index('webhook_deliveries_due_idx').on(t.status, t.nextAttemptAt),
    // The claim walks the webhooks with pending rows and takes each one's first due rows (repos/webhooks.ts `claim`).
    index('webhook_deliveries_pending_idx')
      .on(t.webhookId, t.nextAttemptAt, t.id)
      .where(sql`status = 'pending'`),
  ],
);

/** Every attempt of a delivery: Render's webhook events, the delivery log. */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: text('id').primaryKey(),
    webhookId: text('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    sentAt: ts('sent_at').notNull(),
    statusCode: integer('status_code'),
    durationMs: integer('duration_ms').notNull(),
    error: text('error'),
    /** The first 4 KiB of the response body. */
    responseBody: text('response_body'),
  },
  (t) => [index('webhook_attempts_webhook_idx').on(t.webhookId, t.id)],
);

/** A workspace's Stripe customer and its subscription as Stripe's webhooks last told it (core/billing/stripe-billing.ts). */
export const billingAccounts = pgTable('billing_accounts', {
  workspaceId: text('workspace_id')
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  customerId: text('customer_id').notNull().unique(),
  subscriptionId: text('subscription_id'),
  /** Stripe's subscription status (active, trialing, past_due, canceled, …); null before any subscription. */
  subscriptionStatus: text('subscription_status'),
  priceId: text('price_id'),
  currentPeriodEnd: ts('current_period_end'),
  /** The `created` time of the Stripe event that set the subscription fields: an older event arriving late is ignored. */
  stateAt: ts('state_at'),
  createdAt: createdAt(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

/** Stripe events already handled, by id: a replayed or redelivered event changes nothing. */
export const billingStripeEvents = pgTable('billing_stripe_events', {
  id: text('id').primaryKey(),
  type: text('type').notNull(),
  receivedAt: ts('received_at').notNull().defaultNow(),
});

/**
 * Usage reported to Stripe's meter: one row per workspace, closed period and resource, written before it is sent.
 * The row's identifier goes with the meter event, so a resend after a crash is the same event to Stripe.
 */
export const billingMeterReports = pgTable(
  'billing_meter_reports',
  {
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    periodStart: ts('period_start').notNull(),
    /** A resource id, or a workspace-wide item (build_minutes, bandwidth). */
    resourceKey: text('resource_key').notNull(),
    identifier: text('identifier').notNull().unique(),
    /** Minor units of the catalog's currency. */
    value: integer('value').notNull(),
    /** pending until Stripe accepted it; zero amounts are never sent. */
    status: text('status', { enum: ['pending', 'sent', 'zero'] }).notNull(),
    reportedAt: ts('reported_at'),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.periodStart, t.resourceKey] }),
    index('billing_meter_reports_pending_idx').on(t.status),
  ],
);

/**
 * The usage ledger summed per UTC hour (store/repos/usage-rollups.ts): reports read whole hours here. Rolled up by the
 * usage meter from the entries after `usage_rollups.last_id`.
 */
export const usageHourly = pgTable(
  'usage_hourly',
  {
    workspaceId: text('workspace_id').notNull(),
    hour: ts('hour').notNull(),
    resourceId: text('resource_id').notNull(),
    kind: text('kind', { enum: USAGE_KINDS }).notNull(),
    plan: text('plan').notNull(),
    quantity: doublePrecision('quantity').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.hour, t.resourceId, t.kind, t.plan] })],
);

/** The same sums per UTC day: a month's report reads its whole days here, and hours only for its first and last day. */
export const usageDaily = pgTable(
  'usage_daily',
  {
    workspaceId: text('workspace_id').notNull(),
    day: ts('day').notNull(),
    resourceId: text('resource_id').notNull(),
    kind: text('kind', { enum: USAGE_KINDS }).notNull(),
    plan: text('plan').notNull(),
    quantity: doublePrecision('quantity').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.day, t.resourceId, t.kind, t.plan] })],
);

/** How far the roll-up has read the usage ledger: the last entry id it added (to the hours and days together). */
export const usageRollups = pgTable('usage_rollups', {
  name: text('name').primaryKey(),
  lastId: bigint('last_id', { mode: 'number' }).notNull(),
});

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

/** A GitHub App installation, linked to the one workspace whose admin installed it (core/github). */
export const githubInstallations = pgTable(
  'github_installations',
  {
    /** GitHub's installation id. */
    installationId: text('installation_id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** The account the App is installed on: its login and type (User | Organization). */
    account: text('account').notNull(),
    accountType: text('account_type').notNull(),
    /** GitHub's `repository_selection`: all | selected. */
    repositorySelection: text('repository_selection').notNull(),
    suspended: boolean('suspended').notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('github_installations_workspace_key').on(t.workspaceId)],
);

/** GitHub webhook deliveries seen (X-GitHub-Delivery): a redelivery is recognised and ignored. */
export const githubDeliveries = pgTable('github_deliveries', {
  id: text('id').primaryKey(),
  receivedAt: createdAt(),
});

/** A sign-in identity at an OAuth provider (github | google | apple), linked to one user (core/oauth). */
export const identities = pgTable(
  'identities',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    provider: text('provider').notNull(),
    /** The provider's stable id of the account (`sub`, or GitHub's numeric user id). */
    subject: text('subject').notNull(),
    email: text('email'),
    /** Whether the provider said `email` is verified when the identity was linked. */
    emailVerified: boolean('email_verified').notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('identities_provider_subject_key').on(t.provider, t.subject),
    index('identities_user_idx').on(t.userId),
  ],
);

/**
 * A custom domain of a service (Render's customDomain); routable once its DNS points at Slipway and proves the
 * workspace owns it (core/domains). Any workspace may add any name; at most one row per name is verified.
 */
export const customDomains = pgTable(
  'custom_domains',
  {
    id: text('id').primaryKey(),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    /** The service's workspace, whose TXT token proves ownership (kept here for the per-workspace unique index). */
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** Lowercase, punycode: once per workspace; verified in one workspace at most. */
    name: text('name').notNull(),
    /** apex | subdomain. */
    domainType: text('domain_type').notNull(),
    publicSuffix: text('public_suffix').notNull(),
    /** Set on the twin Slipway adds (www. or apex): it redirects (301) to this name. */
    redirectForName: text('redirect_for_name'),
    /** verified | unverified. */
    verificationStatus: text('verification_status').notNull().default('unverified'),
    verifiedAt: ts('verified_at'),
    /** Why the last check did not verify it (null: verified, or not checked yet). */
    unverifiedReason: text('unverified_reason'),
    /** When the background check next looks (unverified: with backoff; verified: daily). */
    nextCheckAt: ts('next_check_at').notNull().defaultNow(),
    /** Failed checks in a row (the backoff's exponent). */
    failedChecks: integer('failed_checks').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('custom_domains_workspace_name_key').on(t.workspaceId, t.name),
    // Two checks that both find proof cannot both win: the second's update fails on this index.
    uniqueIndex('custom_domains_verified_name_key')
      .on(t.name)
      .where(sql`${t.verificationStatus} = 'verified'`),
    index('custom_domains_service_idx').on(t.serviceId, t.id),
    index('custom_domains_next_check_idx').on(t.nextCheckAt),
  ],
);

/** A custom domain's TLS certificate from ACME (core/domains/certificates.ts); the private key sealed by the secret box. */
export const certificates = pgTable(
  'certificates',
  {
    domainId: text('domain_id')
      .primaryKey()
      .references(() => customDomains.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** none (not issued yet) | issued; a failed renewal keeps serving the issued one. */
    status: text('status').notNull().default('none'),
    certPem: text('cert_pem'),
    keySealed: text('key_sealed'),
    notBefore: ts('not_before'),
    notAfter: ts('not_after'),
    /** When to order next: the first order, a renewal, or a retry after a failure. */
    dueAt: ts('due_at').notNull().defaultNow(),
    failures: integer('failures').notNull().default(0),
    lastError: text('last_error'),
    /** One process orders at a time: the claim ends here (a crashed orderer's claim lapses). */
    claimedUntil: ts('claimed_until'),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('certificates_due_idx').on(t.dueAt)],
);

/** http-01 answers in flight, so whichever router process the ACME server reaches can give them. */
export const acmeChallenges = pgTable('acme_challenges', {
  token: text('token').primaryKey(),
  keyAuthorization: text('key_authorization').notNull(),
  createdAt: createdAt(),
});

/** The ACME account key per directory, sealed by the secret box. */
export const acmeAccounts = pgTable('acme_accounts', {
  directoryUrl: text('directory_url').primaryKey(),
  keySealed: text('key_sealed').notNull(),
  createdAt: createdAt(),
});
