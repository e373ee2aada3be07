import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { isRealDir, removeTree, sizeOf } from '../../lib/file-trees.js';
import type { Logger } from '../../lib/logger.js';
import type { Layout } from '../service-state/layout.js';

/**
 * A service's dependency cache (docs/deploys.md, "Builds"), on its build disk (`layout.cacheDir`, only there while the disk is
 * mounted, during the service's build), so no other service's build ever sees it and it counts against that disk:
 * - `store`: the package managers' own caches and Corepack's downloads, bound read-write into its builds;
 * - `modules/<key>`: the node_modules of its last successful build, by the dependency key (lockfile, package.json,
 *   Node), moved into a build with the same key and moved back after it succeeds. Only the newest key is kept.
 * Both together stay under `maxBytes`: past it the store goes, then the modules. Deleting the service deletes it.
 */
export function createBuildCache(deps: { layout: Layout; maxBytes: number; log?: Pick<Logger, 'warn'> }) {
  const { layout } = deps;
  const modulesRoot = (serviceId: string) => path.join(layout.cacheDir(serviceId), 'modules');
  const savedModules = (serviceId: string, key: string) =>
    path.join(modulesRoot(serviceId), key.slice(0, 32), 'node_modules');

  /**
   * Back under `maxBytes`: the package managers' caches go first, then the saved node_modules. `usedAtMost` (what the
   * whole build disk holds) spares measuring a cache that cannot be over.
   */
  async function trim(serviceId: string, usedAtMost: number): Promise<void> {
    if (usedAtMost <= deps.maxBytes) return;
    let size = await sizeOf(layout.cacheDir(serviceId));
    for (const part of [path.join(layout.cacheDir(serviceId), 'store'), modulesRoot(serviceId)]) {
      if (size <= deps.maxBytes) return;
      await removeTree(part);
      size = await sizeOf(layout.cacheDir(serviceId));
    }
  }

  return {
    enabled: deps.maxBytes > 0,
    /**
     * The package managers' caches for `serviceId`'s builds, and the variables that point them there. pnpm's store
     * only for pnpm projects: npm reads every npm_config_* and warns `Unknown env config "store-dir"`.
     */
    store(serviceId: string, manager?: string): { dir: string; env: Record<string, string> } {
      const dir = path.join(layout.cacheDir(serviceId), 'store');
      return {
        dir,
        env: {
          npm_config_cache: path.join(dir, 'npm'),
          YARN_CACHE_FOLDER: path.join(dir, 'yarn'),
          YARN_GLOBAL_FOLDER: path.join(dir, 'yarn-berry'),
          ...(manager === 'pnpm' ? { npm_config_store_dir: path.join(dir, 'pnpm') } : {}),
          COREPACK_HOME: path.join(dir, 'corepack'),
        },
      };
    },

    /** Render's clearCache: the next build starts from nothing. */
    clear: (serviceId: string) => removeTree(layout.cacheDir(serviceId)),

    /**
     * Moves the saved node_modules for `key` into `workDir` (which has none): a rename on the same disk, so a hit costs
     * nothing on the build's path. The cache holds it again once the build succeeds (keep); whether there was one.
     */
    restore(serviceId: string, key: string, workDir: string): boolean {
      const saved = savedModules(serviceId, key);
      if (!isRealDir(saved)) return false;
      try {
        renameSync(saved, path.join(workDir, 'node_modules'));
        return true;
      } catch {
        return false; // the build installs from the package caches
      }
    },

    /**
     * After a successful build, once its artifact holds a copy: its node_modules becomes the cache for its key,
     * replacing older keys.
     */
    async save(serviceId: string, save: { key: string; workDir: string }): Promise<void> {
      await saveModules(serviceId, save.key, save.workDir).catch((err: Error) =>
        deps.log?.warn({ serviceId, err: err.message }, 'could not update the build cache'),
      );
    },

    /**
     * After every build (a failed one may have filled the store too), once its own files are gone from the disk:
     * back under `maxBytes`. `diskUsed`: the disk's bytes in use, which the cache cannot exceed.
     */
    trim: (serviceId: string, diskUsed: number) =>
      trim(serviceId, diskUsed).catch((err: Error) =>
        deps.log?.warn({ serviceId, err: err.message }, 'could not trim the build cache'),
      ),
  };

  /** Moves `workDir`'s node_modules into the cache for `key`, replacing older keys. */
  async function saveModules(serviceId: string, key: string, workDir: string): Promise<void> {
    const from = path.join(workDir, 'node_modules');
    if (!isRealDir(from)) return;
    const root = modulesRoot(serviceId);
    mkdirSync(root, { recursive: true });
    const incoming = path.join(root, `.incoming-${randomBytes(6).toString('hex')}`);
    mkdirSync(incoming);
    renameSync(from, path.join(incoming, 'node_modules'));
    for (const old of readdirSync(root)) if (old !== path.basename(incoming)) await removeTree(path.join(root, old));
    renameSync(incoming, path.dirname(savedModules(serviceId, key)));
  }
}
export type BuildCache = ReturnType<typeof createBuildCache>;
