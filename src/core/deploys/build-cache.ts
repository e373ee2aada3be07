import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { run, type Command } from '../../lib/exec.js';
import type { Logger } from '../../lib/logger.js';
import type { Layout } from './layout.js';

const TOOL_ENV = { PATH: '/usr/bin:/bin', LC_ALL: 'C' };
const COPY_TIMEOUT_MS = 10 * 60_000;

/**
 * `cp -a`: a symlink is copied as a link, never followed (the top one included: -a implies -P), so a build that
 * planted links in its node_modules cannot make Slipway, which copies as root, read or write through them.
 */
export const copyTreeCommand = (from: string, to: string): Command => ({
  file: 'cp',
  args: ['-a', '--reflink=auto', '--', from, to],
  env: TOOL_ENV,
});

/** Disk use in KiB, hard links counted once. */
export const diskUsageCommand = (dir: string): Command => ({
  file: 'du',
  args: ['-s', '-k', '--', dir],
  env: TOOL_ENV,
});

const isRealDir = (dir: string) => {
  try {
    return lstatSync(dir).isDirectory();
  } catch {
    return false;
  }
};

/**
 * A service's dependency cache (README, "Builds"), under its own dir, so no other service's build ever sees it:
 * - `store`: the package managers' own caches and Corepack's downloads, bound read-write into its builds;
 * - `modules/<key>`: the node_modules of its last successful build, by the dependency key (lockfile, package.json,
 *   Node), moved into a build with the same key and copied out after it succeeds. Only the newest key is kept.
 * Both together stay under `maxBytes`: past it the store goes, then the modules. Deleting the service deletes it.
 */
export function createBuildCache(deps: { layout: Layout; maxBytes: number; log?: Pick<Logger, 'warn'> }) {
  const { layout } = deps;
  /** Per service, the cache writes under way (saves run after the build, off the deploy's path), in order. */
  const pending = new Map<string, Promise<void>>();
  const settled = (serviceId: string) => pending.get(serviceId) ?? Promise.resolve();
  const modulesRoot = (serviceId: string) => path.join(layout.cacheDir(serviceId), 'modules');
  const savedModules = (serviceId: string, key: string) =>
    path.join(modulesRoot(serviceId), key.slice(0, 32), 'node_modules');

  async function sizeOf(dir: string): Promise<number> {
    if (!isRealDir(dir)) return 0;
    const result = await run(diskUsageCommand(dir), { timeoutMs: COPY_TIMEOUT_MS });
    return Number(/^(\d+)/.exec(result.output)?.[1] ?? 0) * 1024;
  }

  const cache = {
    enabled: deps.maxBytes > 0,
    /** The package managers' caches for `serviceId`'s builds, and the variables that point them there. */
    store(serviceId: string): { dir: string; env: Record<string, string> } {
      const dir = path.join(layout.cacheDir(serviceId), 'store');
      return {
        dir,
        env: {
          npm_config_cache: path.join(dir, 'npm'),
          YARN_CACHE_FOLDER: path.join(dir, 'yarn'),
          YARN_GLOBAL_FOLDER: path.join(dir, 'yarn-berry'),
          npm_config_store_dir: path.join(dir, 'pnpm'),
          COREPACK_HOME: path.join(dir, 'corepack'),
        },
      };
    },

    /** Render's clearCache: the next build starts from nothing. */
    async clear(serviceId: string) {
      await settled(serviceId);
      rmSync(layout.cacheDir(serviceId), { recursive: true, force: true });
    },

    /**
     * Moves the saved node_modules for `key` into `workDir` (which has none): a rename, so a hit costs nothing on the
     * build's path. The cache holds it again once the build succeeds (afterBuild); whether there was one.
     */
    async restore(serviceId: string, key: string, workDir: string): Promise<boolean> {
      await settled(serviceId);
      const saved = savedModules(serviceId, key);
      if (!isRealDir(saved)) return false;
      try {
        renameSync(saved, path.join(workDir, 'node_modules'));
        return true;
      } catch {
        return false; // another filesystem, say: the build installs from the package caches
      }
    },

    /**
     * After a successful build, in the background: keeps `save.workDir`'s node_modules as the cache for `save.key`
     * (replacing older keys), then trims the cache. The service's next build, clearCache and deletion (through
     * `track`, the lifecycle's trackWrite) wait for it.
     */
    afterBuild(
      serviceId: string,
      save: { key: string; workDir: string } | undefined,
      track: (serviceId: string, work: () => Promise<void>) => Promise<void>,
    ) {
      const work = settled(serviceId)
        .then(async () => {
          if (save) await saveModules(serviceId, save.key, save.workDir);
          await trim(serviceId);
        })
        .catch((err: Error) => deps.log?.warn({ serviceId, err: err.message }, 'could not update the build cache'))
        .finally(() => {
          if (pending.get(serviceId) === work) pending.delete(serviceId);
        });
      pending.set(serviceId, work);
      void track(serviceId, () => work);
    },
  };
  return cache;

  /** Keeps `workDir`'s node_modules as the cache for `key`, replacing older keys; never recreates a deleted service's dir. */
  async function saveModules(serviceId: string, key: string, workDir: string): Promise<void> {
    const from = path.join(workDir, 'node_modules');
    if (!isRealDir(from) || !isRealDir(layout.serviceDir(serviceId))) return;
    const root = modulesRoot(serviceId);
    mkdirSync(root, { recursive: true });
    const incoming = path.join(root, `.incoming-${randomBytes(6).toString('hex')}`);
    mkdirSync(incoming);
    try {
      const copied = await run(copyTreeCommand(from, path.join(incoming, 'node_modules')), {
        timeoutMs: COPY_TIMEOUT_MS,
      });
      if (copied.exitCode !== 0) return;
      for (const old of readdirSync(root)) {
        const dir = path.join(root, old);
        if (dir !== incoming) rmSync(dir, { recursive: true, force: true });
      }
      renameSync(incoming, path.dirname(savedModules(serviceId, key)));
    } finally {
      rmSync(incoming, { recursive: true, force: true });
    }
  }

  /** Back under `maxBytes`: the package managers' caches go first, then the saved node_modules. */
  async function trim(serviceId: string): Promise<void> {
    let size = await sizeOf(layout.cacheDir(serviceId));
    for (const part of [path.join(layout.cacheDir(serviceId), 'store'), modulesRoot(serviceId)]) {
      if (size <= deps.maxBytes) return;
      rmSync(part, { recursive: true, force: true });
      size = await sizeOf(layout.cacheDir(serviceId));
    }
  }
}
export type BuildCache = ReturnType<typeof createBuildCache>;
