import { existsSync, mkdirSync, renameSync, rmSync, statfsSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { run, type Command } from '../../lib/exec.js';
import { createKeyedLocks } from '../../lib/keyed-locks.js';
import { sizeOf } from '../../lib/file-trees.js';
import type { DiskPlace, ServiceDisks } from '../types.js';
import { mountsUnder, unmountAll, umountCommand, type DiskTools } from './build-disks.js';
import { findProgram } from './capabilities.js';
import { giveTo } from './instances.js';
import type { SandboxPolicy } from './sandbox.js';

const TIMEOUT_MS = 10 * 60_000;
const MIB = 1024 * 1024;
const PATH_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' };

/** The programs a disk needs beyond a build disk's: growing it, and freezing it for a consistent snapshot. */
interface Tools extends DiskTools {
  e2fsck: string;
  resize2fs: string;
  fsfreeze: string;
  cp: string;
}

/** `ok`: the exit codes that mean success (e2fsck's 1 is "errors corrected"). */
async function runOrThrow(file: string, args: string[], what: string, ok = [0]): Promise<void> {
  const cmd: Command = { file, args, env: PATH_ENV };
  const result = await run(cmd, { timeoutMs: TIMEOUT_MS });
  if (!ok.includes(result.exitCode ?? -1))
    throw new Error(`${what} failed: ${result.output.trim().slice(-500) || result.exitCode}`);
}

const mounted = (dir: string) => mountsUnder(dir).includes(path.resolve(dir));

/**
 * Services' persistent disks (docs/deploys.md, "Disks"): each an ext4 image (with its journal: it holds data) of the
 * disk's size, loop-mounted at a host dir that its instances bind at the disk's mountPath. A write past the size fails
 * inside the app (ENOSPC). Snapshots are copies of the image taken while the filesystem is frozen (`fsfreeze`), so
 * each is one instant of it; sparse copies, so they take what the disk holds, not its size.
 */
export function createServiceDisks(found: DiskTools | undefined, runAs: SandboxPolicy['runAs']): ServiceDisks {
  const extra = {
    e2fsck: findProgram('e2fsck'),
    resize2fs: findProgram('resize2fs'),
    fsfreeze: findProgram('fsfreeze'),
    cp: findProgram('cp'),
  };
  const tools: Tools | undefined =
    found && extra.e2fsck && extra.resize2fs && extra.fsfreeze && extra.cp
      ? ({ ...found, ...extra } as Tools)
      : undefined;

  async function makeImage(image: string, sizeMb: number) {
    mkdirSync(path.dirname(image), { recursive: true });
    const partial = `${image}.partial`;
    writeFileSync(partial, '');
    truncateSync(partial, sizeMb * MIB); // sparse: only what is written takes room
    await runOrThrow(tools!.mkfs, ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=1', partial], 'mkfs.ext4');
    renameSync(partial, image);
  }
  /** A larger size takes effect at the next mount: the image grows, then its filesystem (offline, after a check). */
  async function grow(image: string, sizeMb: number) {
    truncateSync(image, sizeMb * MIB);
    await runOrThrow(tools!.e2fsck, ['-f', '-y', image], 'e2fsck', [0, 1]);
    await runOrThrow(tools!.resize2fs, [image], 'resize2fs');
  }

  async function mountNow({ image, dir, sizeMb }: DiskPlace) {
    if (mounted(dir)) return;
    mkdirSync(dir, { recursive: true });
    if (tools) {
      if (!existsSync(image)) await makeImage(image, sizeMb);
      else if (statSync(image).size < sizeMb * MIB) await grow(image, sizeMb);
      await runOrThrow(tools.mount, ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', image, dir], 'mount');
    }
    giveTo(dir, runAs); // its root is the app user's (the files in it keep their owners)
  }
  const unmountNow = async ({ dir }: DiskPlace) => {
    if (tools && existsSync(dir)) await unmountAll(tools, dir);
  };
  /** One change of a disk at a time: an instance's start, the daily snapshot and a restore may come together. */
  const withLock = createKeyedLocks();
  const locked =
    <A extends unknown[], R>(work: (place: DiskPlace, ...rest: A) => Promise<R>) =>
    (place: DiskPlace, ...rest: A) =>
      withLock(place.dir, () => work(place, ...rest));

  return {
    capped: !!tools,
    mount: locked(mountNow),
    unmount: locked(unmountNow),
    async usedBytes({ dir }: DiskPlace) {
      if (!existsSync(dir)) return 0;
      if (!tools || !mounted(dir)) return sizeOf(dir); // a plain dir of the host's disk: what its files take
      const s = statfsSync(dir);
      return (s.blocks - s.bfree) * s.bsize;
    },
    /** Undefined when the disk holds nothing yet (its instance never started): there is nothing to copy. */
    snapshot: locked(async (place: DiskPlace, file: string) => {
      if (!tools) throw new Error('snapshots need loop-mounted disks (mkfs.ext4, mount and loop devices)');
      if (!existsSync(place.image)) return undefined;
      await mountNow(place);
      mkdirSync(path.dirname(file), { recursive: true });
      const partial = `${file}.partial`;
      await runOrThrow(tools.fsfreeze, ['--freeze', place.dir], 'fsfreeze');
      try {
        await runOrThrow(tools.cp, ['--sparse=always', place.image, partial], 'copying the disk');
      } finally {
        await runOrThrow(tools.fsfreeze, ['--unfreeze', place.dir], 'fsfreeze --unfreeze');
      }
      renameSync(partial, file);
      return statSync(file).blocks * 512;
    }),
    /** Puts a snapshot in the image's place (its instances stopped): the next mount is of that state. */
    restore: locked(async (place: DiskPlace, file: string) => {
      if (!tools) throw new Error('snapshots need loop-mounted disks');
      await unmountNow(place);
      const partial = `${place.image}.partial`;
      await runOrThrow(tools.cp, ['--sparse=always', file, partial], 'copying the snapshot');
      renameSync(partial, place.image);
    }),
    remove: locked(async (place: DiskPlace) => {
      await unmountNow(place);
      if (tools && mounted(place.dir)) await run(umountCommand(tools, place.dir, true), { timeoutMs: TIMEOUT_MS });
      rmSync(place.dir, { recursive: true, force: true });
      rmSync(place.image, { force: true });
    }),
  };
}
