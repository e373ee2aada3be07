/**
 * The closed sets of values stored in text and jsonb columns, each written once: store/schema/ types its columns with
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

/** Render's `buildPlan`: the resources of a service's builds, apart from its instances' plan. */
export const BUILD_PLANS = ['starter', 'performance'] as const;
export type BuildPlan = (typeof BUILD_PLANS)[number];

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
export const DEPLOY_TRIGGERS = ['api', 'new_commit', 'rollback', 'deploy_hook'] as const;
export type DeployTrigger = (typeof DEPLOY_TRIGGERS)[number];

export const INSTANCE_STATUSES = ['starting', 'running', 'stopped', 'failed'] as const;
/** What an instance row's process is: one of a deploy's instances, a cron run, or a one-off job (its id is the job's). */
export const INSTANCE_KINDS = ['instance', 'cron_run', 'job'] as const;
export type InstanceKind = (typeof INSTANCE_KINDS)[number];
/** Render's one-off job statuses (its `jobWithCursor` status), in their order. */
export const JOB_STATUSES = ['pending', 'running', 'succeeded', 'failed', 'canceled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** Render's cron run statuses (its `cronJobRun` status; `pending` while it runs). */
export const CRON_RUN_STATUSES = ['pending', 'successful', 'unsuccessful', 'canceled'] as const;
export type CronRunStatus = (typeof CRON_RUN_STATUSES)[number];

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
export const ENV_VAR_REF_PROPERTIES = [
  'connectionString',
  'host',
  'port',
  'hostport',
  'user',
  'password',
  'database',
] as const;

export const PROTECTED_STATUSES = ['unprotected', 'protected'] as const;

export const AUDIT_STATUSES = ['success', 'error'] as const;
export const AUDIT_ACTOR_TYPES = ['user', 'rest_api', 'system'] as const;

export const LOG_TYPES = ['app', 'build', 'request'] as const;
/** Render's log stream settings: forward a resource's logs, or drop them. */
export const LOG_STREAM_SETTINGS = ['send', 'drop'] as const;
export type LogStreamSetting = (typeof LOG_STREAM_SETTINGS)[number];
/** Render's metrics stream providers: each is sent OTLP over HTTP here (Render sends Datadog its own format). */
export const METRICS_STREAM_PROVIDERS = [
  'BETTER_STACK',
  'GRAFANA',
  'DATADOG',
  'NEW_RELIC',
  'HONEYCOMB',
  'SIGNOZ',
  'GROUNDCOVER',
  'CUSTOM',
] as const;
export type MetricsStreamProvider = (typeof METRICS_STREAM_PROVIDERS)[number];

export const USAGE_KINDS = ['instance_seconds', 'build_seconds', 'bandwidth_bytes', 'datastore_seconds'] as const;

/** How metric history buckets are aggregated (Render's `aggregationMethod`). */
export const AGGREGATIONS = ['AVG', 'MAX', 'MIN'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
/** Render's webhook event types (its `eventType` enum, in its order). */
export const RENDER_WEBHOOK_EVENT_TYPES = [
  'autoscaling_config_changed',
  'autoscaling_ended',
  'autoscaling_started',
  'branch_deleted',
  'build_ended',
  'build_started',
  'commit_ignored',
  'cron_job_run_ended',
  'cron_job_run_started',
  'deploy_ended',
  'deploy_started',
  'disk_created',
  'disk_updated',
  'disk_deleted',
  'image_pull_failed',
  'instance_count_changed',
  'job_run_ended',
  'maintenance_mode_enabled',
  'maintenance_mode_uri_updated',
  'maintenance_ended',
  'maintenance_started',
  'pipeline_minutes_exhausted',
  'plan_changed',
  'pre_deploy_ended',
  'pre_deploy_started',
  'server_available',
  'server_failed',
  'server_hardware_failure',
  'server_restarted',
  'service_resumed',
  'service_suspended',
  'zero_downtime_redeploy_ended',
  'zero_downtime_redeploy_started',
  'edge_cache_enabled',
  'edge_cache_disabled',
  'edge_cache_purged',
  'postgres_available',
  'postgres_backup_completed',
  'postgres_backup_failed',
  'postgres_backup_started',
  'postgres_cluster_leader_changed',
  'postgres_created',
  'postgres_disk_size_changed',
  'postgres_disk_autoscaling_enabled_changed',
  'postgres_ha_status_changed',
  'postgres_restarted',
  'postgres_unavailable',
  'postgres_upgrade_failed',
  'postgres_upgrade_started',
  'postgres_upgrade_succeeded',
  'postgres_restore_failed',
  'postgres_restore_succeeded',
  'postgres_read_replicas_changed',
  'postgres_pitr_checkpoint_started',
  'postgres_pitr_checkpoint_failed',
  'postgres_pitr_checkpoint_completed',
  'postgres_read_replica_stale',
  'postgres_wal_archive_failed',
  'key_value_available',
  'key_value_config_restart',
  'key_value_unhealthy',
] as const;
/** What webhooks may carry: Render's types, then Slipway's own in the same style (events Render has no name for). */
export const WEBHOOK_EVENT_TYPES = [
  ...RENDER_WEBHOOK_EVENT_TYPES,
  'service_created',
  'service_updated',
  'service_deleted',
  'port_detected',
  'log_lines_dropped',
  'postgres_deleted',
  'postgres_suspended',
  'postgres_resumed',
  'postgres_updated',
  'postgres_port_taken',
  'key_value_created',
  'key_value_deleted',
  'key_value_restarted',
  'key_value_suspended',
  'key_value_resumed',
  'key_value_updated',
  'key_value_port_taken',
  'webhook_disabled',
  'webhook_test',
  'blueprint_sync_started',
  'blueprint_sync_ended',
  'custom_domain_verified',
  'custom_domain_unverified',
  'certificate_issued',
  'certificate_renewed',
  'certificate_failed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Render's blueprint status. */
export const BLUEPRINT_STATUSES = ['created', 'paused', 'in_sync', 'syncing', 'error'] as const;
export type BlueprintStatus = (typeof BLUEPRINT_STATUSES)[number];
export const BLUEPRINT_SYNC_STATES = ['running', 'succeeded', 'failed'] as const;
export type BlueprintSyncState = (typeof BLUEPRINT_SYNC_STATES)[number];

/** Render's registryCredentialRegistry: the registries a registry credential signs in to. */
export const REGISTRY_CREDENTIAL_REGISTRIES = ['GITHUB', 'GITLAB', 'DOCKER', 'GOOGLE_ARTIFACT', 'AWS_ECR'] as const;
export type RegistryCredentialRegistry = (typeof REGISTRY_CREDENTIAL_REGISTRIES)[number];
