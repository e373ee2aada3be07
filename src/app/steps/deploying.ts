import { createBuildCache } from '../../core/builds/build-cache.js';
import { allowedGitProtocols } from '../../core/builds/commands.js';
import { createDeployEngine } from '../../core/deploys/engine.js';
import { createDisks } from '../../core/disks.js';
import { createGit } from '../../core/builds/git.js';
import { buildLimits } from '../../core/services/details.js';
import { observeDeploy } from '../../observability/prometheus.js';
import type { Cleanup } from '../cleanup.js';
import { wireGitHub } from '../wire-github.js';
import type { Foundation } from './foundation.js';
import type { Shared } from './shared.js';
import type { Tenancy } from './tenancy.js';

/** Git, the GitHub App, and the deploy engine that builds, starts and supervises services (docs/deploys.md). */
export function wireDeploying(p: Foundation & Shared & Tenancy, cleanup: Cleanup) {
  const { config, repos, transact, runtime, layout, logs, usage, log } = p;
  const archive = { maxFiles: config.archiveMaxFiles, maxBytes: config.archiveMaxBytes };
  const gitProtocols = allowedGitProtocols(config.gitAllowLocal);
  const git = createGit({
    runtime,
    settings: {
      protocols: gitProtocols,
      stallMs: config.builds.gitTimeoutMs,
      cloneTimeoutMs: config.buildTimeoutSeconds * 1000,
      pollTimeoutMs: config.builds.gitTimeoutMs,
    },
  });
  const code = wireGitHub({ config, repos, box: p.box, log });
  const engine = createDeployEngine({
    repos,
    transact,
    runtime,
    layout,
    routeTable: p.routeTable,
    lifecycle: p.lifecycle,
    events: p.events,
    urls: p.urls,
    layersOf: p.envGroups.layersOf,
    secretFilesOf: p.secretFiles.resolved,
    limits: {
      buildTimeoutMs: config.buildTimeoutSeconds * 1000,
      healthTimeoutMs: config.healthCheckTimeoutSeconds * 1000,
      keepArtifacts: config.keepArtifacts,
      serviceDiskMb: config.serviceDiskMb,
      crashCheckMs: config.crashCheckMs,
      crashBackoffMs: config.crashBackoffMs,
      archive,
      buildDiskMb: config.builds.diskMb,
      buildQueue: config.builds,
      artifactMaxMb: config.builds.artifactMaxMb,
      buildPlans: {
        starter: buildLimits(config.buildPlans.starter),
        performance: buildLimits(config.buildPlans.performance),
      },
    },
    buildCache: createBuildCache({ layout, maxBytes: config.buildCacheMb * 1024 * 1024, log }),
    log,
    buildLog: logs.buildLog,
    onDeployEnded: (status, deploy) => {
      observeDeploy(status, deploy.startedAt ?? deploy.createdAt);
      code.statuses.ended(status, deploy);
    },
    git,
    gitToken: (service) => code.github.tokenFor(service),
    registryCredential: async (workspaceId, id, imageHost) => {
      const found = await p.registryCredentials.credentialFor(workspaceId, id);
      // Offered to the registry the image names (a team's own registry has no registry type of Render's); a docker
      // build's base images are the credential's registry's.
      return found && { host: imageHost || found.registryHost, username: found.username, password: found.authToken };
    },
    onBuildEnded: (service, deployId, startedAt, endedAt) =>
      usage.meter.recordBuild(service, deployId, startedAt, endedAt),
    // A deleted service's instance rows go with it: meter their last stretch first.
    onRemoved: async () => void (await usage.meter.flush()),
    collectOutput: (run) => logs.collectRest(run),
    onInstanceSpawned: () => logs.instanceSpawned(),
  });
  cleanup.push(() => engine.close());
  const disks = createDisks({
    repos,
    disks: runtime.disks,
    noDisks: 'disks need the sandbox (bubblewrap) on this machine: apt-get install bubblewrap',
    layout,
    control: engine,
    events: p.events,
    checkMs: config.diskCheckMs,
    maxGb: config.diskMaxGb,
    log,
  });
  cleanup.push(() => disks.stop());
  return { archive, gitProtocols, git, code, engine, disks };
}
export type Deploying = ReturnType<typeof wireDeploying>;
