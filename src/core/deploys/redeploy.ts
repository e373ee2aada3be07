import path from 'node:path';
import { conflict } from '../../lib/errors.js';
import { realPathInside } from '../../lib/paths.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { startCommandFor } from '../builds/commands.js';
import { artifactOwner, type Layout } from '../service-state/layout.js';

/**
 * The start command of a deploy without building (Render's deploy_only), which runs `from`'s build with the service's
 * settings as they are now: the configured command, else the one the build's files call for in the service's rootDir,
 * as a build picks it (pipeline.ts). Static sites run none. A 409 when there is none to run.
 */
export function currentStartCommand(layout: Layout, service: ServiceRow, from: DeployRow): string | null {
  if (service.type === 'static_site') return null;
  const dir = layout.artifactDir(service.id, artifactOwner(from));
  // Read only inside the build: a rootDir changed since, or a symlink the build left, must not lead elsewhere.
  const workDir = realPathInside(dir, path.join(dir, service.rootDir));
  if (workDir === 'missing' || workDir === 'outside') {
    if (service.details.startCommand) return service.details.startCommand;
    throw conflict(`rootDir "${service.rootDir}" is not in the live deploy's build: deploy with a build instead`);
  }
  // The configured command too: `yarn start` becomes the script itself, as after a build.
  const command = startCommandFor(workDir, service.details);
  if (!command)
    throw conflict(
      "the live deploy's build has no start command of its own: set envSpecificDetails.startCommand, or deploy with a build",
    );
  return command;
}
