import type { Config } from './config.js';
import type { Blueprints } from '../core/blueprints/blueprints.js';
import { createDeployHooks } from '../core/deploys/deploy-hooks.js';
import type { DeployEngine } from '../core/deploys/engine.js';
import { createGitPoller } from '../core/deploys/git-poller.js';
import type { Events } from '../core/events.js';
import type { EnvVars } from '../core/services/env-vars.js';
import type { Services } from '../core/services/services.js';
import { createGitHub } from '../core/github/github.js';
import { createPreviews } from '../core/github/previews.js';
import { createCommitStatuses } from '../core/github/statuses.js';
import { createGitHubWebhook } from '../core/github/webhook.js';
import { createGitHubApp } from '../integrations/github.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { Repos } from '../store/repos/index.js';
import type { Git } from '../core/builds/git.js';

/**
 * The GitHub App (docs/github-and-sign-in.md, "GitHub pushes"), when configured: the code-host driver, the workspace's view of it, its webhook,
 * and commit statuses. Built before the deploy engine, which clones with its tokens and reports its deploys'
 * ends; the webhook, which triggers deploys, is bound to the engine once that exists.
 */
export function wireGitHub(deps: {
  config: Config;
  repos: Pick<Repos, 'github' | 'services' | 'deployTriggers'>;
  box: SecretBox;
  log: Logger;
}) {
  const { config, repos } = deps;
  const settings = config.github;
  const host = settings ? createGitHubApp(settings) : undefined;
  const github = createGitHub({
    app: host && settings ? { host, config: settings } : undefined,
    repo: repos.github,
    box: deps.box,
  });
  const statuses = createCommitStatuses({
    github,
    host,
    webUrl: settings?.webUrl,
    services: repos.services,
    deployUrl: (serviceId, deployId) => `${config.publicUrl}/v1/services/${serviceId}/deploys/${deployId}`,
    log: deps.log,
  });
  return {
    github,
    statuses,
    webhook: (parts: {
      engine: Pick<DeployEngine, 'trigger'>;
      events: Pick<Events, 'record' | 'poke'>;
      blueprints: Pick<Blueprints, 'syncPushed'>;
      services: Services;
      envVars: EnvVars;
    }) =>
      createGitHubWebhook({
        github,
        webUrl: settings?.webUrl,
        verify: host?.verify,
        repo: repos.github,
        services: repos.deployTriggers,
        engine: parts.engine,
        events: parts.events,
        syncBlueprints: (workspaceId, onRepo) => parts.blueprints.syncPushed(workspaceId, onRepo),
        previews: createPreviews({
          services: parts.services,
          envVars: parts.envVars,
          engine: parts.engine,
          find: async (workspaceId, name) =>
            (await repos.services.list({ workspaceIds: [workspaceId], name: [name], limit: 1 }))[0],
          log: deps.log,
        }),
        onPushDeploy: (service, deployId, sha) => statuses.pending(service, deployId, sha),
        log: deps.log,
      }),
  };
}

/**
 * Deploys without a user at the API: Render's deploy hooks, and the poller for git services whose host does not tell
 * Slipway of pushes (the GitHub App does: `pushed`). The caller starts the poller and stops it on close.
 */
export function wireDeployTriggers(deps: {
  config: Config;
  repos: Pick<Repos, 'deployTriggers' | 'services' | 'deploys'>;
  engine: Pick<DeployEngine, 'trigger'>;
  git: Git;
  pushed: (service: { workspaceId: string; repo: string | null }) => Promise<boolean>;
  log: Logger;
}) {
  const { repos } = deps;
  return {
    deployHooks: createDeployHooks({
      repo: repos.deployTriggers,
      services: repos.services,
      engine: deps.engine,
      hookUrl: (id) => `${deps.config.publicUrl}/deploy/${id}`,
    }),
    gitPoller: createGitPoller({
      repo: repos.deployTriggers,
      deploys: repos.deploys,
      services: repos.services,
      engine: deps.engine,
      git: deps.git,
      pushed: deps.pushed,
      log: deps.log,
    }),
  };
}
