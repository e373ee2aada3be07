import type { Runtime, RuntimeLog } from '../types.js';
import { runBuild } from './builds.js';
import { detectCapabilities } from './capabilities.js';
import { waitHealthy } from './health.js';
import { startInstance, type LocalDeps } from './instances.js';
import { freePort } from './ports.js';
import { isRunning } from './proc.js';
import { stopInstance } from './processes.js';

/**
 * The runtime that runs builds and instances as local processes, sandboxed as far as this machine allows.
 * Capabilities are detected once here and logged once: info for what is applied, a warning per note.
 */
export async function createLocalRuntime(options: { dataDir: string; log?: RuntimeLog }): Promise<Runtime> {
  const { capabilities, policy, cgroups } = await detectCapabilities(options.dataDir);
  const { log } = options;
  log?.info(
    { sandbox: capabilities.sandbox, runAsUser: capabilities.runAsUser?.name ?? null, cgroups: capabilities.cgroups },
    `runtime: sandbox ${capabilities.sandbox}, apps run as ${capabilities.runAsUser?.name ?? "Slipway's user"}, limits via cgroups ${capabilities.cgroups}`,
  );
  for (const note of capabilities.notes) log?.warn({ note }, `runtime: ${note}`);
  cgroups?.sweepEmpty();

  const deps: LocalDeps = { policy, cgroups, log };
  return {
    capabilities,
    build: (spec) => runBuild(deps, spec),
    start: (spec) => startInstance(deps, spec),
    isAlive: isRunning,
    async stop(handle, graceMs) {
      const left = await stopInstance(handle, graceMs, cgroups);
      if (left.length > 0) log?.warn({ pid: handle.pid, cgroups: left }, 'could not remove the cgroups of a stopped instance');
    },
    waitHealthy: ({ handle, ...check }) => waitHealthy(check, () => isRunning(handle)),
    freePort,
  };
}
