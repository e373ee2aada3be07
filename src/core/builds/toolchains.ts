import { lstatSync } from 'node:fs';
import path from 'node:path';
import type { RuntimeTools } from '../../runtime/types.js';
import type { DeployToolchain } from '../../store/schema/index.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { BuildContext, BuildTools } from './build-tools.js';
import { DeployFailure } from '../service-state/failures.js';
import { preparePython, VENV } from './python-builds.js';
import { nodeVersionRequest } from './runtime-versions.js';

/** Where a build leaves Corepack's downloads for its instances, in the service's root dir (and so in its artifact). */
export const COREPACK_COPY = '.corepack';

/**
 * After the build command: Corepack's downloads (the yarn or pnpm it ran) copied into the build, so that a start
 * command running them (`cd backend && yarn start`) finds them at once, offline, with nothing to write. Run in the
 * sandbox: the copy is the tenant's, out of its own files.
 */
const KEEP_COREPACK =
  '{ d="${COREPACK_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/node/corepack}"; ' +
  `if [ -d "$d/v1" ]; then rm -rf ${COREPACK_COPY} && cp -a "$d" ${COREPACK_COPY}; fi; }`;

/** The build command with the tools' steps around it; its own exit status, when it fails, is the whole's. */
export const wrapCommand = (command: string, tools: Pick<BuildTools, 'before' | 'after'>): string =>
  tools.before.length + tools.after.length === 0
    ? command
    : [...tools.before, `(\n${command}\n)`, ...tools.after].join(' && ');

/**
 * What a build needs beyond the service's variables: its Node.js release (prepareNode) or its virtualenv
 * (python-builds.ts) and, for a service with instances, the step that keeps Corepack's downloads for them.
 */
export async function prepareBuildTools(build: BuildContext): Promise<BuildTools> {
  const tools = build.service.details.runtime === 'python' ? await preparePython(build) : await prepareNode(build);
  return build.service.type === 'static_site' ? tools : { ...tools, after: [...tools.after, KEEP_COREPACK] };
}

const isDir = (dir: string) => lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() ?? false;

/**
 * The deploy's toolchain once its build ended: with the Corepack downloads it kept, if any; without the virtualenv
 * when there is none (no build command ran to make it).
 */
export function builtToolchain(tools: BuildTools, workDir: string, rootDir: string): DeployToolchain {
  const { venv, python, ...toolchain }: DeployToolchain = tools.toolchain;
  if (venv && isDir(path.join(workDir, VENV, 'bin'))) Object.assign(toolchain, { venv, python });
  const kept = [path.join(workDir, COREPACK_COPY), path.join(workDir, COREPACK_COPY, 'v1')].every(isDir);
  return kept ? { ...toolchain, corepackHome: path.join(rootDir, COREPACK_COPY) } : toolchain;
}

/** Runtimes whose builds and instances get a Node.js version of their own choosing (static sites build with Node too). */
const usesNode = (service: ServiceRow) => service.type === 'static_site' || service.details.runtime === 'node';

/**
 * The Node.js release a Node build asks for (NODE_VERSION, .node-version, .nvmrc, engines.node), installed; a build
 * that asks for none runs on the host's Node, and the log says which ran and why. An unavailable version fails the
 * build with what is available.
 */
async function prepareNode(at: BuildContext): Promise<BuildTools> {
  const { tools, service, say, signal } = at;
  const none: BuildTools = { env: {}, toolchain: {}, nodeVersion: tools.hostNode, before: [], after: [] };
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
    before: [],
    after: [],
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
