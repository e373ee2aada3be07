import type { Db } from '../db.js';
import { createApiKeyRepo } from './api-keys.js';
import { createAuditRepo } from './audit.js';
import { createBillingRepo } from './billing.js';
import { createBlueprintRepo } from './blueprints.js';
import { createCertificateRepo } from './certificates.js';
import { createCustomDomainRepo } from './custom-domains.js';
import { createDatastoreRepo } from './datastores.js';
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
import { createLogRepo } from './logs.js';
import { createMetricRepo } from './metrics.js';
import { createNoticeRepo } from './notices.js';
import { createProjectRepo } from './projects.js';
import { createRegistryCredentialRepo } from './registry-credentials.js';
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
    instances: createInstanceRepo(db),
    events: createEventRepo(db),
    projects: createProjectRepo(db),
    datastores: createDatastoreRepo(db),
    logs: createLogRepo(db),
    metrics: createMetricRepo(db),
    usage: createUsageRepo(db),
    notices: createNoticeRepo(db),
    webhooks: createWebhookRepo(db),
    billing: createBillingRepo(db),
    blueprints: createBlueprintRepo(db),
    github: createGitHubRepo(db),
    identities: createIdentityRepo(db),
    customDomains: createCustomDomainRepo(db),
    certificates: createCertificateRepo(db),
    registryCredentials: createRegistryCredentialRepo(db),
  };
}
export type Repos = ReturnType<typeof createRepos>;

/** Runs `work` in one transaction, with repositories bound to it. */
export function inTransaction<T>(db: Db, work: (repos: Repos) => Promise<T>): Promise<T> {
  return db.transaction((tx) => work(createRepos(tx as unknown as Db)));
}
export type Transact = <T>(work: (repos: Repos) => Promise<T>) => Promise<T>;
