import type { RouterStatus } from '../model/settings.js';
import type { DiskStatus } from '../observability/usage/disk-status.js';
import type { Access } from '../core/access.js';
import type { ClusterStatus } from '../core/cluster-status.js';
import type { ApiKeys } from '../core/api-keys.js';
import type { AuditLog } from '../core/audit.js';
import type { Auth } from '../core/auth.js';
import type { DeviceCookies } from '../core/device-cookies.js';
import type { OAuth } from '../core/oauth.js';
import type { Team } from '../core/team.js';
import type { DeployEngine } from '../core/deploys/engine.js';
import type { AppUrls } from '../core/service-state/env.js';
import type { Deploys } from '../core/deploys/deploys.js';
import type { DeployHooks } from '../core/deploys/deploy-hooks.js';
import type { SecretFiles } from '../core/secret-files.js';
import type { OneOffJobs } from '../core/one-off-jobs.js';
import type { EnvVars } from '../core/services/env-vars.js';
import type { EnvView } from '../core/services/env-view.js';
import type { PostgresCredentials } from '../core/datastores/credentials.js';
import type { Datastores } from '../core/datastores/datastores.js';
import type { DatastoreExports } from '../core/datastores/exports.js';
import type { PostgresRecovery } from '../core/datastores/recovery.js';
import type { EnvGroups } from '../core/env-groups.js';
import type { Events } from '../core/events.js';
import type { IdempotencyStore } from '../core/idempotency.js';
import type { Projects } from '../core/projects.js';
import type { Disks } from '../core/disks.js';
import type { RegistryCredentials } from '../core/registry-credentials.js';
import type { LogStreamSettings } from '../core/log-streams/settings.js';
import type { MetricsStreamSettings } from '../core/metrics-streams/settings.js';
import type { NotificationSettingsApi } from '../core/notifications/settings.js';
import type { Webhooks } from '../core/webhooks/webhooks.js';
import type { Workspaces } from '../core/workspaces.js';
import type { Services } from '../core/services/services.js';
import type { Config } from '../model/settings.js';
import type { RuntimeCapabilities } from '../runtime/types.js';
import type { Guard } from './guard.js';
import type { Logs } from '../observability/logs/index.js';
import type { MetricsApi } from '../observability/metrics/index.js';
import type { UsageReports } from '../observability/usage/report.js';
import type { Billing } from '../core/billing/billing.js';
import type { Blueprints } from '../core/blueprints/blueprints.js';
import type { Domains } from '../core/domains/domains.js';
import type { GitHub } from '../core/github/github.js';
import type { GitHubWebhook } from '../core/github/webhook.js';

/** What the HTTP layer is given by the composition root (src/app/start.ts): core modules, never repositories. */
export interface HttpDeps {
  config: Config;
  access: Access;
  guard: Guard;
  auth: Auth;
  /** Device cookies: a browser that signed in before is not locked out by others' guesses. */
  devices: DeviceCookies;
  /** Sign-in with GitHub, Google and Apple. */
  oauth: OAuth;
  apiKeys: ApiKeys;
  team: Team;
  audit: AuditLog;
  workspaces: Workspaces;
  idempotency: IdempotencyStore;
  events: Events;
  services: Services;
  envVars: EnvVars;
  envView: EnvView;
  envGroups: EnvGroups;
  /** Render's secret files: a service's own (and, through envGroups, its groups'). */
  secretFiles: SecretFiles;
  /** Render's registry credentials (tokens sealed, never returned). */
  registryCredentials: RegistryCredentials;
  disks: Disks;
  logStreams: LogStreamSettings;
  metricsStreams: MetricsStreamSettings;
  webhooks: Webhooks;
  notifications: NotificationSettingsApi;
  projects: Projects;
  datastores: Datastores;
  /** Render's `/postgres/:id/export`, and Slipway's `/key-value/:id/export`. */
  datastoreExports: DatastoreExports;
  postgresCredentials: PostgresCredentials;
  /** Render's `/postgres/:id/recovery`. */
  postgresRecovery: PostgresRecovery;
  engine: DeployEngine;
  deploys: Deploys;
  /** Render's one-off jobs (the engine runs their processes). */
  jobs: OneOffJobs;
  /** Render's deploy hooks (POST /deploy/:serviceId?key=…). */
  deployHooks: DeployHooks;
  urls: AppUrls;
  health: {
    store(): Promise<void>;
    queue(): Promise<void>;
    storeKind: string;
    runtime: RuntimeCapabilities;
    /** Which data plane serves apps (wire-router.ts). */
    router(): RouterStatus;
    /** Services' disk use against their budget. */
    disk(): Promise<DiskStatus>;
    /** The swarm's nodes, when Slipway uses one (SLIPWAY_SWARM_DOCKER_HOST). */
    swarm?: () => Promise<ClusterStatus>;
  };
  logs: Logs;
  metrics: MetricsApi;
  /** GET /metrics (Prometheus text). */
  prometheus: { contentType: string; metrics(): Promise<string> };
  /** GET /v1/usage. */
  usage: UsageReports;
  /** The cost estimate and Stripe billing. */
  billing: Billing;
  /** render.yaml blueprints and their syncs. */
  blueprints: Blueprints;
  /** The GitHub App: install, status, repositories (501 unconfigured). */
  github: GitHub;
  githubWebhook: GitHubWebhook;
  /** Services' custom domains. */
  domains: Domains;
}
