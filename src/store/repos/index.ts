import type { Db } from '../db.js';
import { createApiKeyRepo } from './api-keys.js';
import { createAuditRepo } from './audit.js';
import { createBillingRepo } from './billing.js';
import { createBlueprintRepo } from './blueprints.js';
import { createCertificateRepo } from './certificates.js';
import { createCustomDomainRepo } from './custom-domains.js';
import { createDatastoreRepo } from './datastores.js';
import { createDiskRepo } from './disks.js';
import { createDeployRepo } from './deploys.js';
import { createDeployTriggerRepo } from './deploy-triggers.js';
import { createEnvGroupRepo } from './env-groups.js';
import { createEnvGroupVarRepo, createEnvVarRepo } from './env-vars.js';
import { createEventRepo } from './events.js';
import { createGitHubRepo } from './github.js';
import { createIdempotencyRepo } from './idempotency.js';
import { createIdentityRepo } from './identities.js';
import { createInstanceRepo } from './instances.js';
import { createInviteRepo } from './invites.js';
import { createJobRepo } from './jobs.js';
import { createLogRepo } from './logs.js';
import { createHttpMetricRepo } from './http-metrics.js';
import { createMetricRepo } from './metrics.js';
import { createNoticeRepo } from './notices.js';
import { createNotificationRepo } from './notifications.js';
import { createPostgresExportRepo } from './postgres-exports.js';
import { createProjectRepo } from './projects.js';
import { createRegistryCredentialRepo } from './registry-credentials.js';
import { createLogStreamRepo } from './log-streams.js';
import { createMetricsStreamRepo } from './metrics-streams.js';
import { createEnvGroupSecretFileRepo, createSecretFileRepo } from './secret-files.js';
import { createServiceRepo } from './services.js';
import { createSessionRepo } from './sessions.js';
import { createUsageRepo } from './usage.js';
import { createUserRepo } from './users.js';
import { createWebhookRepo } from './webhooks.js';
import { createWorkspaceRepo } from './workspaces.js';

/** Every repository over one database handle (the pool, or a transaction). */
export function createRepos(db: Db) {
  return {
    users: createUserRepo(db),
    workspaces: createWorkspaceRepo(db),
    sessions: createSessionRepo(db),
    apiKeys: createApiKeyRepo(db),
    invites: createInviteRepo(db),
    audit: createAuditRepo(db),
    idempotency: createIdempotencyRepo(db),
    services: createServiceRepo(db),
    deploys: createDeployRepo(db),
    deployTriggers: createDeployTriggerRepo(db),
    envVars: createEnvVarRepo(db),
    envGroups: createEnvGroupRepo(db),
    envGroupVars: createEnvGroupVarRepo(db),
    secretFiles: createSecretFileRepo(db),
    envGroupSecretFiles: createEnvGroupSecretFileRepo(db),
    instances: createInstanceRepo(db),
    jobs: createJobRepo(db),
    events: createEventRepo(db),
    projects: createProjectRepo(db),
    datastores: createDatastoreRepo(db),
    disks: createDiskRepo(db),
    postgresExports: createPostgresExportRepo(db),
    logs: createLogRepo(db),
    metrics: createMetricRepo(db),
    httpMetrics: createHttpMetricRepo(db),
    usage: createUsageRepo(db),
    notices: createNoticeRepo(db),
    webhooks: createWebhookRepo(db),
    notifications: createNotificationRepo(db),
    billing: createBillingRepo(db),
    blueprints: createBlueprintRepo(db),
    github: createGitHubRepo(db),
    identities: createIdentityRepo(db),
    customDomains: createCustomDomainRepo(db),
    certificates: createCertificateRepo(db),
    registryCredentials: createRegistryCredentialRepo(db),
    logStreams: createLogStreamRepo(db),
    metricsStreams: createMetricsStreamRepo(db),
  };
}
export type Repos = ReturnType<typeof createRepos>;

/** Runs `work` in one transaction, with repositories bound to it. */
export function inTransaction<T>(db: Db, work: (repos: Repos) => Promise<T>): Promise<T> {
  return db.transaction((tx) => work(createRepos(tx as unknown as Db)));
}
export type Transact = <T>(work: (repos: Repos) => Promise<T>) => Promise<T>;
