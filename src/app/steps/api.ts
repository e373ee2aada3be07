import { clusterStatus } from '../../core/cluster-status.js';
import { createIdempotencyStore } from '../../core/idempotency.js';
import { createEnvView } from '../../core/services/env-view.js';
import { createWorkspaces } from '../../core/workspaces.js';
import { buildApp, type LogOptions } from '../../http/app.js';
import { createGuard } from '../../http/guard.js';
import { createDiskStatus } from '../../observability/usage/disk-status.js';
import type { Cleanup } from '../cleanup.js';
import { wireAuth } from '../wire-auth.js';
import type { Access } from './access.js';
import type { Deploying } from './deploying.js';
import type { Foundation } from './foundation.js';
import type { Resources } from './resources.js';
import type { Shared } from './shared.js';
import type { Tenancy } from './tenancy.js';
import type { Traffic } from './traffic.js';

type Parts = Foundation & Shared & Tenancy & Deploying & Traffic & Access & Resources;

/** The HTTP API (http/app.ts) over the core modules, with sign-in; not listening yet. */
export async function buildApi(p: Parts, options: LogOptions, cleanup: Cleanup) {
  const { config, repos, store, queue, runtime, access, events, services, envVars, envGroups, engine, code } = p;
  const { auth, devices, team, oauth, apiKeys } = wireAuth({
    config,
    repos,
    transact: p.transact,
    principals: p.principals,
    box: p.box,
    log: p.log,
  });
  const app = await buildApp(
    {
      config,
      access,
      guard: createGuard(access),
      auth,
      devices,
      oauth,
      apiKeys,
      team,
      audit: p.audit,
      workspaces: createWorkspaces(repos),
      idempotency: createIdempotencyStore({ repo: repos.idempotency, box: p.box }),
      events,
      services,
      envVars,
      envView: createEnvView({ deploys: repos.deploys, urls: p.urls, layersOf: envGroups.layersOf }),
      envGroups,
      secretFiles: p.secretFiles,
      registryCredentials: p.registryCredentials,
      disks: p.disks,
      logStreams: p.logStreams.settings,
      metricsStreams: p.metricsStreams.settings,
      webhooks: p.hooks.webhooks,
      notifications: p.notifications.settings,
      projects: p.projects,
      datastores: p.datastores,
      datastoreExports: p.datastoreExports,
      postgresRecovery: p.postgresRecovery,
      postgresCredentials: p.postgresCredentials,
      engine,
      deploys: p.deploys,
      jobs: p.jobs,
      deployHooks: p.deployHooks,
      github: code.github,
      githubWebhook: code.webhook({ engine, events, blueprints: p.blueprints, services, envVars }),
      domains: p.custom.domains,
      urls: p.urls,
      health: {
        store: () => store.ping(),
        queue: () => queue.ping(),
        storeKind: store.kind,
        runtime: runtime.capabilities,
        router: p.router.status,
        disk: createDiskStatus(repos.usage, config.serviceDiskMb * 1024 * 1024),
        swarm: p.swarm && clusterStatus(p.swarm),
      },
      logs: p.logs,
      metrics: p.metrics.queries,
      prometheus: p.metrics.prometheus,
      usage: p.usage.reports,
      billing: p.billing,
      blueprints: p.blueprints,
    },
    options,
  );
  cleanup.push(async () => {
    // close() waits for in-flight requests but leaves keep-alive sockets open until they
    // idle out; closing each as soon as it is idle lets shutdown finish promptly.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
    try {
      await app.close();
    } finally {
      clearInterval(sweep);
    }
  });
  return app;
}
