import path from 'node:path';
import type { RuntimeTools } from '../../runtime/types.js';
import type { DeployToolchain } from '../../store/schema.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { DeployFailure } from './failures.js';
import { nodeVersionRequest } from './runtime-versions.js';

/** What a build runs with beyond the service's variables (docs/deploys.md, "Runtime versions"). */
export interface BuildTools {
  /** Added to the build's environment (PATH with the asked Node first, its headers for native addons). */
  env: Record<string, string>;
  /** Kept on the deploy, for its instances and pre-deploy command. */
  toolchain: DeployToolchain;
  /** The Node.js version the build runs: the dependency cache's key includes it. */
  nodeVersion: string;
}

/** Runtimes whose builds and instances get a Node.js version of their own choosing (static sites build with Node too). */
const usesNode = (service: ServiceRow) => service.type === 'static_site' || service.details.runtime === 'node';

/**
 * The Node.js release a Node build asks for (NODE_VERSION, .node-version, .nvmrc, engines.node), installed; a build
 * that asks for none runs on the host's Node, and the log says which ran and why. An unavailable version fails the
 * build with what is available.
 */
export async function prepareNode(
  tools: RuntimeTools,
  service: ServiceRow,
  at: { env: Record<string, string>; workDir: string; repoRoot: string },
  say: (line: string) => void,
  signal: AbortSignal,
): Promise<BuildTools> {
  const none: BuildTools = { env: {}, toolchain: {}, nodeVersion: tools.hostNode };
  if (!usesNode(service)) return none;
  const request = nodeVersionRequest(at.env, at.workDir, at.repoRoot);
  if (!request) {
    say(
      `Using Node.js ${tools.hostNode}, this machine's: no NODE_VERSION, .node-version, .nvmrc or engines.node asks for another`,
    );
    return none;
  }
  const asked = `Node.js ${JSON.stringify(request.value)} (from ${request.from})`;
  const started = Date.now();
  const node = await tools.node(request.value, signal).catch((err: Error) => {
    throw new DeployFailure(signal.aborted ? 'canceled' : 'build_failed', `${asked}: ${err.message}`);
  });
  const took = Date.now() - started > 1000 ? `, downloaded in ${((Date.now() - started) / 1000).toFixed(1)} s` : '';
  say(`Using Node.js ${node.version} (from ${request.from}: ${JSON.stringify(request.value)}${took})`);
  return {
    // npm_config_nodedir: node-gyp builds native addons against this release's headers, not a download of them.
    env: { PATH: [node.binDir, at.env.PATH].filter(Boolean).join(':'), npm_config_nodedir: node.dir },
    toolchain: { node: node.version },
    nodeVersion: node.version,
  };
}

/**
 * An instance's (or pre-deploy command's, or cron run's) environment with what its deploy's build ran with: the
 * virtualenv, then the Node.js release, first on its PATH; Corepack's downloads where yarn and pnpm look.
 */
export async function withDeployToolchain(
  env: Record<string, string>,
  toolchain: DeployToolchain | null | undefined,
  artifactDir: string,
  tools: RuntimeTools,
): Promise<Record<string, string>> {
  if (!toolchain) return env;
  const first: string[] = [];
  const added: Record<string, string> = {};
  if (toolchain.venv) {
    added.VIRTUAL_ENV = path.join(artifactDir, toolchain.venv);
    first.push(path.join(added.VIRTUAL_ENV, 'bin'));
  }
  // Installed already, unless its cache was removed since: then it comes back from the registry.
  if (toolchain.node) first.push((await tools.node(toolchain.node)).binDir);
  if (toolchain.corepackHome) added.COREPACK_HOME = path.join(artifactDir, toolchain.corepackHome);
  if (first.length === 0 && Object.keys(added).length === 0) return env;
  return { ...env, ...added, PATH: [...first, env.PATH].filter(Boolean).join(':') };
}
