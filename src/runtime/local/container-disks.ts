import { existsSync, mkdirSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { run } from '../../lib/exec.js';
import { mkfsCommand, mountCommand, mountsUnder, umountCommand, type DiskTools } from './build-disks.js';

const TIMEOUT_MS = 30_000;
/** SLIPWAY_CONTAINER_DISK_MB's default: a service's images, layer cache and containers' roots together. */
export const DEFAULT_CONTAINER_DISK_MB = 10_240;
const MIB = 1024 * 1024;

/** The file a storage dir's disk is kept in: beside it (`services/<id>/containers.img`). */
export const diskImageOf = (storageDir: string) => `${path.resolve(storageDir)}.img`;

/**
 * Each service's container storage on a disk of its own (docs/containers.md, "Storage"): a sparse ext4 image,
 * loop-mounted on the storage dir the first time a build, a pull or a container needs it, and kept mounted (its
 * containers run on it, through restarts of Slipway) until the service is deleted. Its images, layer cache and its
 * containers' writable layers together cannot pass `sizeMb`, so a container may write to its root as on Render
 * without filling the host's disk. `ensure` says whether the storage is so capped: not without the tools, nor for a
 * storage made before disks were (kept as it is, with its images).
 */
export function createContainerDisks(tools: DiskTools | undefined, sizeMb: number) {
  const capped = new Map<string, Promise<boolean>>();

  async function mount(dir: string): Promise<boolean> {
    if (!tools) return false;
    if (mountsUnder(dir).includes(dir)) return true; // mounted before this process started
    const image = diskImageOf(dir);
    if (!existsSync(image)) {
      if (existsSync(dir) && readdirSync(dir).length > 0) return false; // a storage from before disks
      mkdirSync(path.dirname(image), { recursive: true }); // an image service's dir is made by its first pull
      writeFileSync(image, '');
      truncateSync(image, sizeMb * MIB); // sparse: only what is written takes room
      const made = await run(mkfsCommand(tools, image), { timeoutMs: TIMEOUT_MS });
      if (made.exitCode !== 0) {
        rmSync(image, { force: true });
        throw new Error(`mkfs.ext4 of the service's container disk failed: ${made.output.trim().slice(-300)}`);
      }
    }
    mkdirSync(dir, { recursive: true });
    const mounted = await run(mountCommand(tools, image, dir), { timeoutMs: TIMEOUT_MS });
    if (mounted.exitCode !== 0)
      throw new Error(`the service's container disk could not be mounted: ${mounted.output.trim().slice(-300)}`);
    return true;
  }

  return {
    /** Mounts the storage's disk if it is not yet (once at a time per dir); true when the storage is capped. */
    ensure(storageDir: string): Promise<boolean> {
      const dir = path.resolve(storageDir);
      let known = capped.get(dir);
      if (!known) {
        known = mount(dir);
        capped.set(dir, known);
        known.catch(() => capped.delete(dir)); // the next call tries again
      }
      return known;
    },
    /** Unmounts the storage's disk (the service is deleted; its containers are gone): lazily if still busy. */
    async release(storageDir: string): Promise<void> {
      const dir = path.resolve(storageDir);
      capped.delete(dir);
      if (!tools || !mountsUnder(dir).includes(dir)) return;
      const result = await run(umountCommand(tools, dir), { timeoutMs: TIMEOUT_MS });
      if (result.exitCode !== 0) await run(umountCommand(tools, dir, true), { timeoutMs: TIMEOUT_MS });
    },
  };
}
export type ContainerDisks = ReturnType<typeof createContainerDisks>;
