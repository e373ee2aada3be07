/**
 * The closed sets of values stored in text and jsonb columns, each written once: store/schema.ts types its columns with
 * them, core derives its unions from them, the HTTP schemas their TypeBox unions (http/schemas/common.ts,
 * `literalUnion`). Drizzle's text enums are TypeScript-only (no check constraint): changing a tuple needs no migration.
 * Where the API lists the values, the tuple keeps the API's order, so the OpenAPI document lists them as before.
 */

/** Highest first; core/principal.ts ranks by this order. */
export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;

export const SERVICE_TYPES = [
  'web_service',
  'private_service',
  'background_worker',
  'cron_job',
  'static_site',
] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];

export const AUTO_DEPLOY = ['yes', 'no'] as const;

/** Render's `suspenders`: why a service is suspended (empty when it runs). */
export const SUSPENDERS = ['user', 'stuck_crashlooping'] as const;
export type Suspender = (typeof SUSPENDERS)[number];
/** Render's `suspended`, read from the suspenders (services) or the flag (datastores); also a list filter. */
export const SUSPENDED = ['suspended', 'not_suspended'] as const;
export type Suspended = (typeof SUSPENDED)[number];

export const DEPLOY_STATUSES = [
  'created',
  'queued',
  'build_in_progress',
  'pre_deploy_in_progress',
  'update_in_progress',
  'live',
  'deactivated',
  'build_failed',
  'pre_deploy_failed',
  'update_failed',
  'canceled',
] as const;
/** The Render triggers Slipway starts deploys with. */
export const DEPLOY_TRIGGERS = ['api', 'new_commit', 'rollback'] as const;
export type DeployTrigger = (typeof DEPLOY_TRIGGERS)[number];

export const INSTANCE_STATUSES = ['starting', 'running', 'stopped', 'failed'] as const;

export const DATASTORE_KINDS = ['postgres', 'keyValue'] as const;
export const DATASTORE_STATUSES = [
  'creating',
  'available',
  'unavailable',
  'suspended',
  'config_restart',
  'recovery_failed',
  'recovery_in_progress',
  'updating_instance',
  'unknown',
] as const;
/** What an env var may take from a datastore (`fromDatabase` / `fromKeyValue`). */
export const ENV_VAR_REF_PROPERTIES = ['connectionString', 'host', 'port', 'user', 'password', 'database'] as const;

export const PROTECTED_STATUSES = ['unprotected', 'protected'] as const;

export const AUDIT_STATUSES = ['success', 'error'] as const;
export const AUDIT_ACTOR_TYPES = ['user', 'rest_api', 'system'] as const;

export const LOG_TYPES = ['app', 'build', 'request'] as const;

export const USAGE_KINDS = ['instance_seconds', 'build_seconds', 'bandwidth_bytes', 'datastore_seconds'] as const;

/** How metric history buckets are aggregated (Render's `aggregationMethod`). */
export const AGGREGATIONS = ['AVG', 'MAX', 'MIN'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];
