import { existsSync, mkdirSync, realpathSync, rmSync } from 'node:fs';
import path from 'node:path';
import { extractArchive } from '../../lib/archive.js';
import { run, type RunResult } from '../../lib/exec.js';
import { toStorableText } from '../../lib/text.js';
import type { Runtime } from '../../runtime/types.js';
import type { DeployRepo, DeployRow, DeployStatus } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { PLAN_LIMITS } from '../services/details.js';
import { buildCommandFor, gitCheckoutCommand, gitCloneCommand, gitHeadCommand, startCommandFor } from './commands.js';
import type { Layout } from './layout.js';

export interface PipelineLimits {
  buildTimeoutMs: number;
  archive: { maxFiles: number; maxBytes: number };
  /** The git transports a clone may use (commands.ts allowedGitProtocols). */
  gitProtocols: string[];
}

/** Why a process failed, in the shape of Render's failure reason (events' `failure`), when known. */
export type FailureReason =
  | { oomKilled: { memoryLimit: string } }
  | { timedOutSeconds: number }
  | { nonZeroExit: number }
  | { interrupted: true };

/** Render's oomKilled reason for a process limited to `memoryMb`. */
export const oomKilledReason = (memoryMb: number) => ({ oomKilled: { memoryLimit: `${memoryMb}Mi` } });

/** A step failed: the deploy ends in `status` with `reason` (and the build output so far). */
export class DeployFailure extends Error {
  constructor(
    readonly status: DeployStatus,
    reason: string,
    readonly failure?: FailureReason,
  ) {
    super(toStorableText(reason)); // it may quote a command's output, NUL bytes included
  }
}

/** What a deploy_ended event says of a failure: the status, the reason in words, and Render's structured `failure` when known. */
export const deployEndedDetails = (failure: DeployFailure) => ({
  status: failure.status,
  reason: failure.message,
  ...(failure.failure ? { failure: failure.failure } : {}),
});
/** The same for the build_ended event of a build that failed (Render's buildStatus words). */
export const buildEndedDetails = (failure: DeployFailure) => ({
  ...deployEndedDetails(failure),
  status: failure.status === 'canceled' ? 'canceled' : 'failed',
});

/** Why a build or pre-deploy command that did not succeed failed; undefined when it succeeded. */
/** How a build or pre-deploy command failed, if it did; `output` (its tail) is added to a non-zero exit's reason. */
export function commandFailure(
  status: DeployStatus,
  what: string,
  result: RunResult,
  limits: { memoryMb: number; timeoutMs: number },
  output?: string,
): DeployFailure | undefined {
  if (result.canceled) return new DeployFailure('canceled', `canceled during ${what}`);
  if (result.oomKilled) {
    return new DeployFailure(
      status,
      `${what} ran out of memory: the kernel killed it at its ${limits.memoryMb} MB limit`,
      oomKilledReason(limits.memoryMb),
    );
  }
  const seconds = Math.round(limits.timeoutMs / 1000);
  if (result.timedOut)
    return new DeployFailure(status, `${what} did not finish within ${seconds} s`, { timedOutSeconds: seconds });
  if (result.exitCode === 0) return undefined;
  return new DeployFailure(
    status,
    `${what} exited with ${result.exitCode ?? result.signal}${output ? `: ${output}` : ''}`,
    result.exitCode ? { nonZeroExit: result.exitCode } : undefined,
  );
}

const OUTPUT_TAIL = 64 * 1024;

/**
 * `dir` exists and really lies inside `root`, symlinks resolved: a repo or a build could
 * otherwise point rootDir or publishPath at the data dir or `/` (the build would be handed
 * it, or the router would serve it).
 */
function checkInside(root: string, dir: string, what: string) {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    throw new DeployFailure('build_failed', `${what} is not in the source`);
  }
  const realRoot = realpathSync(root);
  if (real !== realRoot && !real.startsWith(realRoot + path.sep))
    throw new DeployFailure('build_failed', `${what} leads outside the source (a symlink?)`);
}

/** Fetch and build (docs/architecture.md, "Deploys"): fills the deploy's artifact dir and picks its start command. */
/** Where build and pre-deploy output lines go (the log store, type `build`). */
export type BuildLog = (service: ServiceRow, deployId: string) => { write(chunk: string): void; end(): void };

export function createBuilder(deps: {
  repo: DeployRepo;
  runtime: Runtime;
  layout: Layout;
  limits: PipelineLimits;
  buildEnv(service: ServiceRow, deploy: DeployRow): Promise<Record<string, string>>;
  buildLog?: BuildLog;
}) {
  const { repo, runtime, layout, limits } = deps;

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

    const command = buildCommandFor(workDir, details);
    let output = '';
    if (command) {
      const toLog = deps.buildLog?.(service, deploy.id);
      const result = await runtime.build({
        dir: workDir,
        command,
        env: await deps.buildEnv(service, deploy),
        timeoutMs: limits.buildTimeoutMs,
        signal,
        limits: PLAN_LIMITS[details.plan],
        onOutput: (chunk) => {
          output = (output + chunk).slice(-OUTPUT_TAIL);
          toLog?.write(chunk);
        },
      });
      toLog?.end();
      await repo.update(deploy.id, { buildOutput: toStorableText(output || result.output.slice(-OUTPUT_TAIL)) });
      const failure = commandFailure('build_failed', 'the build', result, {
        memoryMb: PLAN_LIMITS[details.plan].memoryMb,
        timeoutMs: limits.buildTimeoutMs,
      });
      if (failure) throw failure;
    }
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
