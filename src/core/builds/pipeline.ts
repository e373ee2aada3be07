import { existsSync, mkdirSync, realpathSync, renameSync } from 'node:fs';
import path from 'node:path';
import { extractArchive } from '../../lib/archive.js';
import { run } from '../../lib/exec.js';
import { realPathInside } from '../../lib/paths.js';
import type { Limits } from '../../model/limits.js';
import type { BuildDisk } from '../../runtime/types.js';
import type { BuildPlan } from '../../model/enums.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { copyTreeCommand, removeTree, sizeOf } from '../../lib/file-trees.js';
import { runBuildStep, type BuildStepDeps } from './build-step.js';
import { buildImage, pullImage, type ImageDeps } from './images.js';
import { startCommandFor } from './commands.js';
import { DeployFailure } from '../service-state/failures.js';
import { GitError, type Git } from './git.js';
import type { Layout } from '../service-state/layout.js';
import type { Lifecycle } from '../service-state/lifecycle.js';
import type { Logger } from '../../lib/logger.js';
import type { DeployToolchain } from '../../store/schema/index.js';

const MIB = 1024 * 1024;
const COPY_TIMEOUT_MS = 10 * 60_000;
/** How long a service's build disk stays mounted after a build, for its next one (docs/deploys.md, "Deploy speed"). */
const KEEP_MOUNTED_MS = 60_000;

export interface PipelineLimits {
  buildTimeoutMs: number;
  archive: { maxFiles: number; maxBytes: number };
  /** What a build gets, by the service's buildPlan. */
  buildPlans: Record<BuildPlan, Limits>;
  /** Each service's build disk (SLIPWAY_BUILD_DISK_MB): its source, build, HOME and dependency cache. */
  buildDiskMb: number;
  /** The largest artifact a build may leave (SLIPWAY_ARTIFACT_MAX_MB). */
  artifactMaxMb: number;
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

/** What to tell a user whose build filled its disk: the figure, the cause, the fix. */
export const diskFullMessage = (limits: Pick<PipelineLimits, 'buildDiskMb'>) =>
  `the build disk is full: a service's builds may write ${limits.buildDiskMb} MiB (SLIPWAY_BUILD_DISK_MB), ` +
  'its source, build output, HOME and dependency cache together. Make the build write less (or deploy with ' +
  'clearCache: "clear"), or the operator raises SLIPWAY_BUILD_DISK_MB';

/** diskFullMessage when the disk is (nearly) full, else undefined. */
export function diskFullReason(disk: BuildDisk, limits: Pick<PipelineLimits, 'buildDiskMb'>): string | undefined {
  if (!disk.capped) return undefined;
  const { sizeBytes, freeBytes } = disk.space();
  return freeBytes > Math.max(MIB, sizeBytes / 200) ? undefined : diskFullMessage(limits);
}

/** Fetch and build (docs/architecture.md, "Deploys"): fills the deploy's artifact dir and picks its start command. */
export function createBuilder(
  deps: Omit<BuildStepDeps, 'buildPlans' | 'timeoutMs'> & {
    layout: Layout;
    limits: PipelineLimits;
    git: Git;
    /** A token for the service's repo (a GitHub App installation's), when it has one. */
    gitToken?: (service: ServiceRow) => Promise<string | undefined>;
    /** A build's tidy-up runs after it, off the deploy's critical path (lifecycle.tidy). */
    lifecycle: Pick<Lifecycle, 'tidy' | 'tidied'>;
    log?: Pick<Logger, 'warn'>;
    /** A workspace's registry credential, for pulls (core/registry-credentials.ts). */
    credential?: ImageDeps['credential'];
  },
) {
  const { layout, limits, runtime } = deps;
  const stepDeps: BuildStepDeps = { ...deps, buildPlans: limits.buildPlans, timeoutMs: limits.buildTimeoutMs };
  const containers = runtime.capabilities.containers;
  const imageDeps: ImageDeps = {
    ...stepDeps,
    containers: runtime.containers,
    noEngine: 'none' in containers ? containers.none : undefined,
    storageOf: layout.containerStorage,
  };

  /** The source into `dir` (which does not exist yet; its parent is on the build disk). */
  async function fetchSource(
    service: ServiceRow,
    deploy: DeployRow,
    dir: string,
    disk: BuildDisk,
    signal: AbortSignal,
  ): Promise<Partial<DeployRow>> {
    if (deploy.sourceId) {
      await extractArchive(layout.sourceFile(service.id, deploy.sourceId), dir, limits.archive).catch((err: Error) => {
        throw new DeployFailure(
          'build_failed',
          diskFullReason(disk, limits) ?? `the uploaded archive could not be unpacked: ${err.message}`,
        );
      });
      return {};
    }
    if (!service.repo)
      throw new DeployFailure('build_failed', 'nothing to deploy: upload a source archive or set a repo');
    try {
      const head = await deps.git.clone({
        repo: service.repo,
        branch: service.branch ?? undefined,
        commitId: deploy.commitId ?? undefined,
        token: await deps.gitToken?.(service),
        into: dir,
        limits: limits.buildPlans[service.details.buildPlan ?? 'starter'],
        signal,
        diskFull: () => diskFullReason(disk, limits),
        diskFullMessage: disk.capped ? diskFullMessage(limits) : undefined,
      });
      await removeTree(path.join(dir, '.git'));
      return { commitId: head.commitId || null, commitMessage: head.message || null };
    } catch (err) {
      if (err instanceof GitError) throw new DeployFailure(signal.aborted ? 'canceled' : 'build_failed', err.message);
      throw err;
    }
  }

  /**
   * The built tree becomes the deploy's artifact, on the host's disk: refused past SLIPWAY_ARTIFACT_MAX_MB. It is no
   * bigger than what the build disk holds, so only a disk holding more is measured.
   */
  /** Copies `from` to `sub` (a relative path) in the artifact dir `to`, which holds nothing else. */
  async function publish(from: string, to: string, disk: BuildDisk, sub = '.'): Promise<void> {
    const { sizeBytes, freeBytes } = disk.space();
    const bytes = disk.capped && sizeBytes - freeBytes <= limits.artifactMaxMb * MIB ? 0 : await sizeOf(from);
    if (bytes > limits.artifactMaxMb * MIB)
      throw new DeployFailure(
        'build_failed',
        `the build's output is ${Math.ceil(bytes / MIB)} MiB, over the ${limits.artifactMaxMb} MiB an artifact may ` +
          'hold (SLIPWAY_ARTIFACT_MAX_MB): leave build scratch files out of the source dir (delete them at the end of ' +
          'the build command, or write them to /tmp), or the operator raises SLIPWAY_ARTIFACT_MAX_MB',
      );
    // Copied under a name garbage collection does not read (artifact-links.ts), then renamed: while the previous
    // deploy's collection runs, it sees only whole artifacts.
    const partial = path.join(path.dirname(to), `.${path.basename(to)}.partial`);
    await removeTree(to, partial);
    const dest = path.join(partial, sub);
    mkdirSync(path.dirname(dest), { recursive: true });
    const copied = await run(copyTreeCommand(from, dest), { timeoutMs: COPY_TIMEOUT_MS });
    if (copied.exitCode !== 0) {
      await removeTree(partial);
      throw new Error(`could not keep the artifact: ${copied.output.trim().slice(-300)}`);
    }
    renameSync(partial, to);
  }

  /**
   * Returns the start command (undefined for static sites and cron jobs that need none yet). The build runs on the
   * service's build disk (a size-capped filesystem of its own, where the runtime can make one); what it leaves is
   * copied to the artifact dir.
   */
  return async function build(
    service: ServiceRow,
    deploy: DeployRow,
    signal: AbortSignal,
  ): Promise<{ startCommand?: string; commit: Partial<DeployRow>; toolchain?: DeployToolchain }> {
    const details = service.details;
    if (details.runtime === 'image') return { commit: {}, ...(await pullImage(imageDeps, service, deploy, signal)) };
    if (existsSync(layout.legacyCacheDir(service.id))) await removeTree(layout.legacyCacheDir(service.id));
    await deps.lifecycle.tidied(service.id, 'build'); // the previous build's
    const disk = await runtime.mountBuildDisk({
      image: layout.buildDiskImage(service.id),
      dir: layout.buildDir(service.id),
      sizeMb: limits.buildDiskMb,
      keepMountedMs: KEEP_MOUNTED_MS,
    });
    const work = path.join(disk.dir, 'work');
    const home = path.join(disk.dir, 'home');
    const src = path.join(work, 'src');
    let save: { key: string; workDir: string } | undefined;
    try {
      const left = [work, home].filter((dir) => existsSync(dir)); // a killed build's
      if (left.length > 0) await removeTree(...left);
      mkdirSync(work, { recursive: true });
      const commit = await fetchSource(service, deploy, src, disk, signal);
      if (!existsSync(src)) mkdirSync(src, { recursive: true });
      const workDir = path.join(src, service.rootDir);
      checkInside(src, workDir, `rootDir "${service.rootDir}"`);

      if (details.runtime === 'docker')
        return { commit, ...(await buildImage(imageDeps, service, deploy, src, signal)) };
      const place = { home, repoRoot: src, diskFull: () => diskFullReason(disk, limits) };
      // The build sees the commit it builds (RENDER_GIT_COMMIT), known only once the source is fetched.
      let toolchain: DeployToolchain;
      ({ save, toolchain } = await runBuildStep(stepDeps, service, { ...deploy, ...commit }, workDir, place, signal));
      checkInside(src, workDir, `rootDir "${service.rootDir}"`); // the build may have replaced it
      const artifactDir = layout.artifactDir(service.id, deploy.id);
      if (service.type === 'static_site') {
        const publishDir = path.join(workDir, details.publishPath);
        checkInside(src, publishDir, `publishPath "${details.publishPath}"`);
        // The artifact is what the site serves, at the same place (rootDir/publishPath): not its source and
        // node_modules, which made a Create React App artifact 485 MB for a 552 KB build/.
        await publish(realpathSync(publishDir), artifactDir, disk, path.join(service.rootDir, details.publishPath));
        return { commit };
      }
      const startCommand = startCommandFor(workDir, details);
      if (!startCommand)
        throw new DeployFailure(
          'build_failed',
          'no start command: set envSpecificDetails.startCommand, add a Procfile web: line or an npm start script',
        );
      await publish(src, artifactDir, disk);
      return { startCommand, commit, toolchain };
    } catch (err) {
      save = undefined;
      throw err;
    } finally {
      const { cache } = deps;
      const saving = save;
      // The deploy goes on meanwhile; the service's next build starts after it.
      deps.lifecycle.tidy(service.id, 'build', async () => {
        try {
          if (cache?.enabled && saving) await cache.save(service.id, saving);
          await removeTree(work, home);
          if (cache?.enabled) await cache.trim(service.id, disk.space().sizeBytes - disk.space().freeBytes);
        } catch (err) {
          deps.log?.warn({ serviceId: service.id, err: (err as Error).message }, 'tidying up after a build failed');
        } finally {
          await disk.release();
        }
      });
    }
  };
}
export type Builder = ReturnType<typeof createBuilder>;
