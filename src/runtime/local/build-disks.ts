import {
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { run, type Command } from '../../lib/exec.js';
import type { BuildDisk } from '../types.js';
import { findProgram } from './capabilities.js';

const TIMEOUT_MS = 30_000;
const MIB = 1024 * 1024;

export interface DiskTools {
  mkfs: string;
  mount: string;
  umount: string;
}

const tool = (file: string, ...args: string[]): Command => ({
  file,
  args,
  env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
});

/**
 * A blank ext4 filesystem in `image`: no journal (it holds a cache and a build's scratch: after a crash it is made
 * again rather than repaired), no blocks reserved for root, inode tables initialised lazily (the image stays sparse).
 */
export const mkfsCommand = (tools: DiskTools, image: string): Command =>
  tool(tools.mkfs, '-q', '-F', '-m', '0', '-O', '^has_journal', '-E', 'lazy_itable_init=1', image);

/**
 * A loop mount that frees its loop device when unmounted; `discard` gives the host's disk back what the build deletes
 * (the image is sparse), `nosuid,nodev` keeps what a build wrote from becoming a set-uid program or a device.
 */
export const mountCommand = (tools: DiskTools, image: string, dir: string): Command =>
  tool(tools.mount, '-t', 'ext4', '-o', 'loop,discard,nosuid,nodev,noatime', image, dir);

export const umountCommand = (tools: DiskTools, dir: string, lazy = false): Command =>
  tool(tools.umount, ...(lazy ? ['-l'] : []), dir);

/** Mount points at or under `dir` (from /proc/self/mountinfo; octal escapes decoded), deepest first. */
export function mountsUnder(dir: string, mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): string[] {
  const root = path.resolve(dir);
  const points = mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => !!p)
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .filter((p) => p === root || p.startsWith(root + path.sep));
  return points.sort((a, b) => b.length - a.length);
}

async function runOrThrow(cmd: Command, what: string): Promise<void> {
  const result = await run(cmd, { timeoutMs: TIMEOUT_MS });
  if (result.exitCode !== 0) throw new Error(`${what} failed: ${result.output.trim() || `exit ${result.exitCode}`}`);
}

/** Unmounts whatever is mounted at `dir` (a disk a killed Slipway left mounted), lazily when something holds it. */
export async function unmountAll(tools: DiskTools, dir: string): Promise<void> {
  for (const point of mountsUnder(dir)) {
    const result = await run(umountCommand(tools, point), { timeoutMs: TIMEOUT_MS });
    if (result.exitCode !== 0) await run(umountCommand(tools, point, true), { timeoutMs: TIMEOUT_MS });
  }
}

const space = (dir: string) => {
  const s = statfsSync(dir);
  return { sizeBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize };
};

/**
 * Unmounts the build disks a killed Slipway left mounted in `dataDir` (a service's `build/`, a blueprint's clone
 * dir): at start, and by tests before they remove a data dir. Nothing else mounted there is touched.
 */
export async function sweepBuildDisks(dataDir: string): Promise<void> {
  const root = path.resolve(dataDir);
  const ours = (point: string) => {
    const rel = path.relative(root, point).split(path.sep);
    return (
      (rel.length === 3 && rel[0] === 'services' && rel[2] === 'build') ||
      (rel.length === 3 && rel[0] === 'blueprints' && rel[1] === '.clones')
    );
  };
  const umount = findProgram('umount');
  if (!umount || process.getuid?.() !== 0) return;
  for (const point of mountsUnder(root).filter(ours)) {
    const result = await run(tool(umount, point), { timeoutMs: TIMEOUT_MS });
    if (result.exitCode !== 0) await run(tool(umount, '-l', point), { timeoutMs: TIMEOUT_MS });
  }
}

/**
 * Build disks (docs/deploys.md, "Build limits"): each service's builds write to an ext4 image of their own, loop-mounted for
 * the build, so a build can fill at most its own disk. Without the tools or loop devices, `dir` is a plain dir of the
 * host's disk (capped: false), which capabilities report. The first disk that cannot be mounted at all (a machine
 * whose loop devices refuse us) turns them off for this process, told once through `onUnusable`.
 */
export function createBuildDisks(found: DiskTools | undefined, onUnusable?: (reason: string) => void) {
  let tools = found;
  async function makeImage(image: string, sizeMb: number): Promise<void> {
    rmSync(image, { force: true });
    mkdirSync(path.dirname(image), { recursive: true });
    writeFileSync(image, '');
    truncateSync(image, sizeMb * MIB); // sparse: only what is written takes room
    await runOrThrow(mkfsCommand(tools!, image), 'mkfs.ext4');
  }
  const plainDir = (dir: string): BuildDisk => {
    mkdirSync(dir, { recursive: true });
    return { dir, capped: false, space: () => space(dir), release: async () => undefined };
  };

  /**
   * Disks kept mounted after a build (keepMountedMs), by dir: the service's next build within that time skips a mount
   * and an unmount (about 100–200 ms of a deploy here: docs/deploys.md, "Deploy speed").
   */
  const kept = new Map<string, { disk: BuildDisk; unmount: () => Promise<void>; timer: NodeJS.Timeout }>();
  const keep = (disk: BuildDisk, unmount: () => Promise<void>, ms: number) => {
    const timer = setTimeout(() => void unmountKept(disk.dir), ms).unref();
    kept.set(disk.dir, { disk, unmount, timer });
  };
  async function unmountKept(dir?: string): Promise<void> {
    if (dir === undefined) return void (await Promise.all([...kept.keys()].map((d) => unmountKept(d))));
    const disk = kept.get(dir);
    if (!disk) return;
    kept.delete(dir);
    clearTimeout(disk.timer);
    await disk.unmount();
  }

  async function mountBuildDisk(opts: {
    image: string;
    dir: string;
    sizeMb: number;
    keepMountedMs?: number;
  }): Promise<BuildDisk> {
    const { image, dir, sizeMb, keepMountedMs } = opts;
    const reused = kept.get(dir);
    if (
      reused &&
      mountsUnder(dir).includes(path.resolve(dir)) &&
      statSync(image, { throwIfNoEntry: false })?.size === sizeMb * MIB
    ) {
      kept.delete(dir);
      clearTimeout(reused.timer);
      return reused.disk;
    }
    await unmountKept(dir);
    if (!tools) return plainDir(dir);
    // This disk's own: a later one that cannot be mounted turns `tools` off, and this one must still be unmounted.
    const mountedWith = tools;
    await unmountAll(tools, dir);
    mkdirSync(dir, { recursive: true });
    const size = statSync(image, { throwIfNoEntry: false })?.size;
    if (size !== sizeMb * MIB) await makeImage(image, sizeMb);
    const mounted = await run(mountCommand(tools, image, dir), { timeoutMs: TIMEOUT_MS });
    if (mounted.exitCode !== 0) {
      // An image a crash left unusable holds only a cache: made again. A fresh one that cannot be mounted either
      // means this machine cannot loop-mount.
      await makeImage(image, sizeMb);
      const again = await run(mountCommand(tools, image, dir), { timeoutMs: TIMEOUT_MS });
      if (again.exitCode !== 0) {
        tools = undefined;
        rmSync(image, { force: true });
        onUnusable?.(`a loop-mounted disk could not be made here (${again.output.trim().split('\n')[0]})`);
        return plainDir(dir);
      }
    }
    const unmount = () => unmountAll(mountedWith, dir);
    const disk: BuildDisk = {
      dir,
      capped: true,
      space: () => space(dir),
      release: async () => (keepMountedMs ? keep(disk, unmount, keepMountedMs) : unmount()),
    };
    return disk;
  }
  return { mountBuildDisk, unmountBuildDisk: unmountKept };
}

/**
 * The programs build disks need, or why they cannot be made here. Not proven by a mount at start (a mount and its
 * umount contend with the start's namespaces for the kernel's mount lock): the first build's mount is the proof.
 */
export function detectDiskTools(): DiskTools | string {
  if (process.getuid?.() !== 0) return 'Slipway is not running as root, so it cannot mount build disks';
  const tools = { mkfs: findProgram('mkfs.ext4'), mount: findProgram('mount'), umount: findProgram('umount') };
  if (!tools.mkfs || !tools.mount || !tools.umount)
    return 'mkfs.ext4, mount or umount not found (Debian: e2fsprogs, mount)';
  if (!existsSync('/dev/loop-control')) return 'this machine has no loop devices (/dev/loop-control is missing)';
  return tools as DiskTools;
}
