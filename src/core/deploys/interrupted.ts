import type { Events } from '../events.js';
import { IN_PROGRESS, type DeployRow, type DeployStatus } from '../../store/repos/deploys.js';
import type { Repos } from '../../store/repos/index.js';
import { buildEndedDetails, DeployFailure, deployEndedDetails } from '../service-state/failures.js';

const FAILED_IN: Partial<Record<DeployStatus, DeployStatus>> = {
  build_in_progress: 'build_failed',
  pre_deploy_in_progress: 'pre_deploy_failed',
  update_in_progress: 'update_failed',
};

/**
 * After a (re)start of Slipway: a deploy that was in progress when it stopped can never finish (its
 * build died with Slipway). It fails in the status of its step, with the events it was owed: its
 * build's end, when it was building, and its own.
 */
export async function failInterruptedDeploys(deps: {
  repos: Pick<Repos, 'services' | 'deploys'>;
  events: Events;
  onDeployEnded?(status: DeployStatus, deploy: DeployRow): void;
}) {
  const { repos, events } = deps;
  for (const deploy of await repos.deploys.inStatus(IN_PROGRESS)) {
    const status = FAILED_IN[deploy.status] ?? 'update_failed';
    const failure = new DeployFailure(status, 'interrupted: Slipway stopped while this deploy was running', {
      interrupted: true,
    });
    if (!(await repos.deploys.transition(deploy.id, [deploy.status], status, { failureReason: failure.message })))
      continue;
    const service = await repos.services.get(deploy.serviceId);
    if (!service) continue;
    const record = (type: string, details: Record<string, unknown>) =>
      events.record({ workspaceId: service.workspaceId, serviceId: service.id, deployId: deploy.id, type, details });
    if (deploy.status === 'build_in_progress') await record('build_ended', buildEndedDetails(failure));
    await record('deploy_ended', deployEndedDetails(failure));
    deps.onDeployEnded?.(status, deploy);
  }
}
