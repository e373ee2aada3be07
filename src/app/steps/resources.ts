import { createDeploys } from '../../core/deploys/deploys.js';
import { createOneOffJobs } from '../../core/one-off-jobs.js';
import { createSourceLinker, createSourceStore } from '../../core/deploys/sources.js';
import { checkRepo, createServices } from '../../core/services/services.js';
import { createAutoscaler } from '../../core/services/autoscaling.js';
import type { Cleanup } from '../cleanup.js';
import { wireBlueprints } from '../wire-blueprints.js';
import { wireDomains } from '../wire-domains.js';
import { wireDeployTriggers } from '../wire-github.js';
import type { Access } from './access.js';
import type { Deploying } from './deploying.js';
import type { Foundation } from './foundation.js';
import type { Shared } from './shared.js';
import type { Tenancy } from './tenancy.js';
import type { Traffic } from './traffic.js';

type Parts = Foundation & Shared & Tenancy & Deploying & Traffic & Access;

/**
 * What the API acts on besides the workspace's own data: services and their deploys, what triggers deploys without a
 * user (deploy hooks, the git poller, started here), custom domains, and Blueprints (recovered here).
 */
export async function wireResources(p: Parts, cleanup: Cleanup) {
  const { config, repos, transact, store, layout, events, engine, git, archive, gitProtocols, code, log } = p;
  const services = createServices({
    repos,
    transact,
    envVars: p.envVars,
    events,
    engine,
    lifecycle: p.lifecycle,
    assertEnvironment: p.projects.assertEnvironment,
    gitProtocols,
    assertMayAddPaid: p.billing.assertMayAddPaid,
    cache: p.readCache,
    noContainers: 'none' in p.runtime.capabilities.containers ? p.runtime.capabilities.containers.none : undefined,
  });
  const deploys = createDeploys({
    repo: repos.deploys,
    engine,
    saveUpload: createSourceStore({
      repo: repos.deploys,
      layout,
      maxUploadBytes: config.maxUploadBytes,
      archive,
    }),
    linkSource: createSourceLinker({ repo: repos.deploys, layout }),
    cache: p.readCache,
  });
  const jobs = createOneOffJobs({ repos, engine, assertMayAddPaid: p.billing.assertMayAddPaid });
  const autoscaler = createAutoscaler({
    repos,
    events,
    log,
    scale: (service, numInstances) => services.update(service, { serviceDetails: { numInstances } }),
    ...config.autoscale,
    sampleMaxAgeMs: 2 * config.metricsIntervalMs + config.autoscale.intervalMs,
  });
  autoscaler.start();
  cleanup.push(() => autoscaler.stop());
  const { deployHooks, gitPoller } = wireDeployTriggers({
    config,
    repos,
    engine,
    git,
    pushed: (service) => code.github.pushes(service),
    log,
  });
  gitPoller.start(config.gitPollIntervalMs);
  cleanup.push(() => gitPoller.stop());
  const custom = await wireDomains({
    config,
    repos,
    routeTable: p.routeTable,
    events,
    box: p.box,
    tls: p.router.certificates,
    log,
  });
  cleanup.push(() => custom.stop());
  const blueprints = wireBlueprints({
    config,
    repos,
    services,
    envVars: p.envVars,
    envGroups: p.envGroups,
    datastores: p.datastores,
    projects: p.projects,
    deploys,
    engine,
    events,
    audit: p.audit,
    log,
    archive,
    git,
    runtime: p.runtime,
    checkRepo: (repo) => checkRepo(repo, gitProtocols),
    gitToken: (owner) => code.github.tokenFor(owner),
    domains: custom.domains,
    disks: p.disks,
  });
  await blueprints.recover(store.kind === 'pglite');
  cleanup.push(() => blueprints.close());
  return { services, deploys, jobs, deployHooks, custom, blueprints };
}
export type Resources = Awaited<ReturnType<typeof wireResources>>;
