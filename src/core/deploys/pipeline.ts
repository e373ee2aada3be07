import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { extractArchive } from '../../lib/archive.js';
import { run } from '../../lib/exec.js';
import { realPathInside } from '../../lib/paths.js';
import type { Limits } from '../../runtime/types.js';
import type { BuildPlan } from '../../store/enums.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { runBuildStep, type BuildStepDeps } from './build-step.js';
import { gitCheckoutCommand, gitCloneCommand, gitHeadCommand, startCommandFor } from './commands.js';
import { DeployFailure } from './failures.js';
import type { Layout } from './layout.js';

export interface PipelineLimits {
  buildTimeoutMs: number;
  archive: { maxFiles: number; maxBytes: number };
  /** The git transports a clone may use (commands.ts allowedGitProtocols). */
  gitProtocols: string[];
  /** What a build gets, by the service's buildPlan. */
  buildPlans: Record<BuildPlan, Limits>;
}

/**
 * `dir` exists and really lies inside `root`, symlinks resolved: a repo or a build could
 * otherwise point rootDir or publishPath at the data dir or `/` (the build would be handed
 * it, or the router would serve it).
 */
function checkInside(root: string, dir: string, what: string) {
  const real = realPathInside(root, dir);
  if (real === 'missing') throw new DeployFailure('build_failed', `${what} is not in the source`);
  if (real === 'outside') throw new DeployFailure('build_failed', `${what} leads outside the source (a symlink?)`);
}

/** Fetch and build (docs/architecture.md, "Deploys"): fills the deploy's artifact dir and picks its start command. */
export function createBuilder(
  deps: Omit<BuildStepDeps, 'buildPlans' | 'timeoutMs'> & {
    layout: Layout;
    limits: PipelineLimits;
    /** A token for the service's repo (a GitHub App installation's), when it has one. */
    gitToken?: (service: ServiceRow) => Promise<string | undefined>;
  },
) {
  const { layout, limits } = deps;
  const stepDeps: BuildStepDeps = { ...deps, buildPlans: limits.buildPlans, timeoutMs: limits.buildTimeoutMs };

  async function fetchSource(
    service: ServiceRow,
    deploy: DeployRow,
    dir: string,
    signal: AbortSignal,
  ): Promise<Partial<DeployRow>> {
    if (deploy.sourceId) {
      await extractArchive(layout.sourceFile(service.id, deploy.sourceId), dir, limits.archive).catch((err: Error) => {
        throw new DeployFailure('build_failed', `the uploaded archive could not be unpacked: ${err.message}`);
      });
      return {};
    }
    if (!service.repo)
      throw new DeployFailure('build_failed', 'nothing to deploy: upload a source archive or set a repo');
    const git = async (cmd: Parameters<typeof run>[0], what: string) => {
      const result = await run(cmd, { timeoutMs: limits.buildTimeoutMs, signal });
      if (result.exitCode !== 0)
        throw new DeployFailure('build_failed', `${what} failed: ${result.output.trim().slice(-2000)}`);
      return result.output;
    };
    await git(
      gitCloneCommand(service.repo, dir, {
        branch: service.branch ?? undefined,
        commitId: deploy.commitId ?? undefined,
        protocols: limits.gitProtocols,
        token: await deps.gitToken?.(service),
      }),
      'git clone',
    );
    if (deploy.commitId) await git(gitCheckoutCommand(dir, deploy.commitId), `git checkout ${deploy.commitId}`);
    const [commitId, ...subject] = (await git(gitHeadCommand(dir), 'git log')).trim().split('\n');
    rmSync(path.join(dir, '.git'), { recursive: true, force: true });
    return { commitId: commitId ?? null, commitMessage: subject.join('\n') || null };
  }

  /** Returns the start command (undefined for static sites and cron jobs that need none yet). */
  return async function build(
    service: ServiceRow,
    deploy: DeployRow,
    signal: AbortSignal,
  ): Promise<{ startCommand?: string; commit: Partial<DeployRow> }> {
    const details = service.details;
    const dir = layout.artifactDir(service.id, deploy.id);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(path.dirname(dir), { recursive: true });
    const commit = await fetchSource(service, deploy, dir, signal);
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
    const workDir = path.join(dir, service.rootDir);
    checkInside(dir, workDir, `rootDir "${service.rootDir}"`);

    await runBuildStep(stepDeps, service, deploy, workDir, signal);
    checkInside(dir, workDir, `rootDir "${service.rootDir}"`); // the build may have replaced it
    if (service.type === 'static_site') {
      checkInside(dir, path.join(workDir, details.publishPath), `publishPath "${details.publishPath}"`);
      return { commit };
    }
    const startCommand = startCommandFor(workDir, details);
    if (!startCommand)
      throw new DeployFailure(
        'build_failed',
        'no start command: set envSpecificDetails.startCommand, add a Procfile web: line or an npm start script',
      );
    return { startCommand, commit };
  };
}
export type Builder = ReturnType<typeof createBuilder>;
