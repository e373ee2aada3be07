import { outputTail, secretValues } from '../service-state/output-tail.js';
import { toStorableText } from '../../lib/text.js';
import type { Limits } from '../../model/limits.js';
import type { Runtime, SecretFileSpec } from '../../runtime/types.js';
import type { BuildPlan } from '../../model/enums.js';
import type { DeployRepo, DeployRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { BuildCache } from './build-cache.js';
import { defaultBuildCommand, dependencyKey, detectNodeProject, type NodeProject } from './package-managers.js';
import { commandFailure, DeployFailure } from '../service-state/failures.js';
import { builtToolchain, prepareBuildTools, wrapCommand } from './toolchains.js';
import type { DeployToolchain } from '../../store/schema/index.js';

const OUTPUT_TAIL = 64 * 1024;

/** Where build and pre-deploy output lines go (the log store, type `build`). */
export type BuildLog = (service: ServiceRow, deployId: string) => { write(chunk: string): void; end(): void };

export interface BuildStepDeps {
  repo: Pick<DeployRepo, 'update'>;
  runtime: Runtime;
  cache?: BuildCache;
  /** What a build gets, by the service's buildPlan (config: SLIPWAY_BUILD_<PLAN>_MEMORY_MB, _CPUS). */
  buildPlans: Record<BuildPlan, Limits>;
  timeoutMs: number;
  buildEnv(service: ServiceRow, deploy: DeployRow): Promise<Record<string, string>>;
  /** The service's secret files, which its build reads at /etc/secrets as its instances do. */
  secretFilesOf?(serviceId: string): Promise<SecretFileSpec[]>;
  buildLog?: BuildLog;
}

/**
 * Where a build runs: its HOME on the build disk, the repository's root (version files are read there too), and what
 * to say when that disk filled up (undefined: it did not).
 */
export interface BuildPlace {
  home: string;
  repoRoot: string;
  diskFull(): string | undefined;
}

/** How to get more memory than `plan` gives, for a build that ran out. */
function memoryHint(plan: BuildPlan, plans: Record<BuildPlan, Limits>): string {
  const setting = `SLIPWAY_BUILD_${plan.toUpperCase()}_MEMORY_MB`;
  return plan === 'starter'
    ? `Set serviceDetails.buildPlan to "performance" (${plans.performance.memoryMb} MiB), or the operator raises ${setting}`
    : `The operator can raise ${setting}`;
}

/**
 * The build command in `workDir` (docs/deploys.md, "Builds"): the service's own, else install + build with the project's
 * package manager, on the Node.js release it asks for (toolchains.ts); around it the dependency cache (restored before,
 * saved after a successful build).
 * Its output goes to the build log and the deploy's buildOutput, with `==>` lines saying what Slipway did.
 * Throws the DeployFailure when the command fails. Returns the node_modules to keep in the cache once the artifact
 * holds its copy (cache.keep), and what the deploy's instances run with (its toolchain).
 */
export async function runBuildStep(
  deps: BuildStepDeps,
  service: ServiceRow,
  deploy: DeployRow,
  workDir: string,
  place: BuildPlace,
  signal: AbortSignal,
): Promise<{ save?: { key: string; workDir: string }; toolchain: DeployToolchain }> {
  const { cache } = deps;
  const details = service.details;
  const toLog = deps.buildLog?.(service, deploy.id);
  let output = '';
  const write = (chunk: string) => {
    output = (output + chunk).slice(-OUTPUT_TAIL);
    toLog?.write(chunk);
  };
  const say = (line: string) => write(`==> ${line}\n`);
  try {
    if (deploy.clearCache && cache) {
      await cache.clear(service.id);
      say('Cleared the build cache');
    }
    const serviceEnv = await deps.buildEnv(service, deploy);
    const tools = await prepareBuildTools({
      tools: deps.runtime.tools,
      service,
      env: serviceEnv,
      workDir,
      repoRoot: place.repoRoot,
      say,
      signal,
    });
    const project = detectNodeProject(workDir);
    const cacheable = project?.hasDependencies && !project.vendored;
    const key = cache?.enabled && cacheable ? await dependencyKey(workDir, project, tools.nodeVersion) : undefined;
    const restored = key ? cache!.restore(service.id, key, workDir) : false;
    if (project) say(`Using ${project.manager}${project.berry ? ' (yarn 2+)' : ''}, ${dependencyWords(project)}`);
    if (restored) say('Restored node_modules from the build cache (same lockfile and package.json)');
    else if (key) say('No build cache for these dependencies');
    const command = details.buildCommand || (project ? defaultBuildCommand(project, restored) : '');
    const toolchain = () => builtToolchain(tools, workDir, service.rootDir);
    if (!command) return { save: key ? { key, workDir } : undefined, toolchain: toolchain() };
    const buildPlan = details.buildPlan ?? 'starter';
    const limits = deps.buildPlans[buildPlan];
    say(`Running build command '${command}' (buildPlan ${buildPlan}: ${limits.memoryMb} MiB)`);
    const store = cache?.enabled ? cache.store(service.id, project?.manager) : undefined;
    const env = { ...store?.env, ...serviceEnv, ...tools.env };
    const result = await deps.runtime.build({
      dir: workDir,
      command: wrapCommand(command, tools),
      env,
      cacheDir: store?.dir,
      homeDir: place.home,
      timeoutMs: deps.timeoutMs,
      signal,
      limits,
      onOutput: write,
      secretFiles: await deps.secretFilesOf?.(service.id),
    });
    const full = result.exitCode !== 0 ? place.diskFull() : undefined;
    if (full && !result.canceled) throw new DeployFailure('build_failed', `the build command failed: ${full}`);
    // The reason ends with the build's last lines (secrets masked) and where the whole output is.
    const tail = outputTail(output, secretValues(env));
    const where = `the whole build log: GET /v1/logs?resource=${service.id}&type=build`;
    const failure = commandFailure(
      'build_failed',
      'the build command',
      result,
      { memoryMb: limits.memoryMb, timeoutMs: deps.timeoutMs, memoryHint: memoryHint(buildPlan, deps.buildPlans) },
      tail ? `its last output:\n${tail}\n(${where})` : `it printed nothing (${where})`,
    );
    if (failure) throw failure;
    if (key) say('Saving node_modules to the build cache, after the build');
    return { save: key ? { key, workDir } : undefined, toolchain: toolchain() };
  } finally {
    toLog?.end();
    await deps.repo.update(deploy.id, { buildOutput: toStorableText(output) });
  }
}

const dependencyWords = (project: NodeProject) =>
  project.vendored
    ? 'node_modules comes with the source'
    : !project.hasDependencies
      ? 'no dependencies'
      : project.lockfile
        ? `following ${project.lockfile}`
        : 'no lockfile: dependencies resolve afresh';
