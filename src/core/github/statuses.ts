import type { Logger } from '../../lib/logger.js';
import type { CodeHost, CommitState } from '../../integrations/github.js';
import type { DeployRow, DeployStatus } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { githubRepoKey, type GitHub } from './github.js';

const ENDED: Partial<Record<DeployStatus, { state: CommitState; description: string }>> = {
  live: { state: 'success', description: 'Deployed: live' },
  build_failed: { state: 'failure', description: 'The build failed' },
  pre_deploy_failed: { state: 'failure', description: 'The pre-deploy command failed' },
  update_failed: { state: 'failure', description: 'The new instances did not become healthy' },
  canceled: { state: 'error', description: 'The deploy was canceled' },
};

/**
 * Deploy status back to GitHub as commit statuses (context `slipway`), for deploys of a commit of a repo the
 * workspace's installation reaches: pending when a push starts one, then success or failure with a link to it.
 * Best effort: GitHub being down never fails a deploy.
 */
export function createCommitStatuses(deps: {
  github: GitHub;
  host: CodeHost | undefined;
  webUrl: string | undefined;
  services: { get(id: string): Promise<ServiceRow | undefined> };
  deployUrl: (serviceId: string, deployId: string) => string;
  log: Logger;
}) {
  async function send(service: ServiceRow, deployId: string, sha: string, state: CommitState, description: string) {
    if (!deps.host || !deps.webUrl || !service.repo) return;
    const key = githubRepoKey(service.repo, deps.webUrl);
    const link = key ? await deps.github.usable(service.workspaceId) : undefined;
    if (!key || !link) return;
    const [, owner, repo] = key.split('/') as [string, string, string];
    await deps.host
      .setStatus(link.installationId, {
        owner,
        repo,
        sha,
        state,
        description,
        targetUrl: deps.deployUrl(service.id, deployId),
      })
      .catch((err: Error) =>
        deps.log.warn({ serviceId: service.id, err: err.message }, 'could not send a commit status'),
      );
  }
  return {
    pending: (service: ServiceRow, deployId: string, sha: string) =>
      void send(service, deployId, sha, 'pending', 'Deploying'),
    ended(status: DeployStatus, deploy: DeployRow) {
      const outcome = ENDED[status];
      if (!outcome || !deploy.commitId || !deps.host) return;
      void deps.services
        .get(deploy.serviceId)
        .then((service) => service && send(service, deploy.id, deploy.commitId!, outcome.state, outcome.description))
        .catch(() => undefined);
    },
  };
}
