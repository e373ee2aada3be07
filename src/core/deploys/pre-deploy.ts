import path from 'node:path';
import type { Runtime } from '../../runtime/types.js';
import type { Release } from '../instances/instances.js';
import type { BuildLog } from '../builds/build-step.js';
import { commandFailure } from '../service-state/failures.js';

/** A pre-deploy command's resources, whatever the service's plan (a migration, not the app). */
const PRE_DEPLOY_LIMITS = { memoryMb: 1024, cpuMillicores: 1000, pids: 2048, diskMb: 2048 };

/** Runs the service's pre-deploy command in the release's artifact; throws the DeployFailure when it fails. */
export async function runPreDeploy(
  deps: { runtime: Runtime; timeoutMs: number; buildLog?: BuildLog },
  release: Release,
  env: Record<string, string>,
  signal: AbortSignal,
) {
  const { service, deploy } = release;
  const toLog = deps.buildLog?.(service, deploy.id);
  const { container } = release;
  const containers = deps.runtime.containers;
  // A container's runs in its new image (Render's), on the workspace's network as a native one's.
  const result =
    container && containers
      ? await containers.run({
          storageDir: container.storageDir,
          image: container.image,
          command: service.details.preDeployCommand,
          env,
          secretFiles: await release.secretFiles(),
          limits: PRE_DEPLOY_LIMITS,
          network: { workspaceId: service.workspaceId },
          timeoutMs: deps.timeoutMs,
          signal,
          onOutput: toLog?.write,
        })
      : await deps.runtime.build({
          dir: path.join(release.artifactDir, service.rootDir),
          command: service.details.preDeployCommand,
          env,
          timeoutMs: deps.timeoutMs,
          signal,
          limits: PRE_DEPLOY_LIMITS,
          onOutput: toLog?.write,
          // Migrations reach the workspace's datastores by their internal names, as its instances do.
          network: { workspaceId: service.workspaceId },
          secretFiles: await release.secretFiles(),
        });
  toLog?.end();
  const failure = commandFailure(
    'pre_deploy_failed',
    'the pre-deploy command',
    result,
    { memoryMb: PRE_DEPLOY_LIMITS.memoryMb, timeoutMs: deps.timeoutMs },
    result.output.slice(-2000),
  );
  if (failure) throw failure;
}
