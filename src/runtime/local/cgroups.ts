import { mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Limits } from '../../model/limits.js';

export type Controller = 'memory' | 'cpu' | 'pids';

/** One mounted hierarchy we put groups in (v2: the one with all controllers; v1: one per controller). */
export interface Hierarchy {
  root: string;
  controllers: Controller[];
  /** Whether swap can be limited too (v1 without swap accounting cannot). */
  swap: boolean;
}

export const CPU_PERIOD_US = 100_000;
/**
 * A background group's CPU weight (v2 cpu.weight, 1–10000, default 100; v1 cpu.shares, 2–262144, default 1024):
 * nice does not reach across groups, so a build's group must itself yield to Slipway's API and to the apps. An eighth
 * of an app's weight, not the least: another workspace's busy apps must slow builds down, never starve them.
 */
const BACKGROUND_WEIGHT = { v2: '12', v1: '128' } as const;
/** Groups live in their own top-level subtree, not under Slipway's cgroup, so a service manager stopping Slipway does not take the apps with it. */
export const PARENT = 'slipway';

/** The control files to write in a new group to apply `limits`, in order. */
export function limitFiles(
  version: 'v1' | 'v2',
  hierarchy: Pick<Hierarchy, 'controllers' | 'swap'>,
  limits: Limits,
  background = false,
): [file: string, value: string][] {
  const memory = String(Math.round(limits.memoryMb * 1024 * 1024));
  const files: [string, string][] = [];
  if (hierarchy.controllers.includes('memory')) {
    files.push([version === 'v2' ? 'memory.max' : 'memory.limit_in_bytes', memory]);
    // No swap: v2 caps it at 0; v1's memsw counts memory+swap, so it is set equal to the memory limit.
    if (hierarchy.swap)
      files.push(version === 'v2' ? ['memory.swap.max', '0'] : ['memory.memsw.limit_in_bytes', memory]);
  }
  if (hierarchy.controllers.includes('cpu')) {
    files.push(...cpuFiles(version, limits.cpuMillicores));
    if (background) files.push([version === 'v2' ? 'cpu.weight' : 'cpu.shares', BACKGROUND_WEIGHT[version]]);
  }
  // Same file in v1 and v2; it counts threads too, so a fork (or thread) bomb gets EAGAIN here.
  if (hierarchy.controllers.includes('pids')) files.push(['pids.max', String(Math.max(1, Math.round(limits.pids)))]);
  return files;
}

/** The control files that give a group `millicores` of CPU time. */
function cpuFiles(version: 'v1' | 'v2', millicores: number): [file: string, value: string][] {
  const quota = String(Math.max(1000, Math.round((millicores * CPU_PERIOD_US) / 1000)));
  return version === 'v2'
    ? [['cpu.max', `${quota} ${CPU_PERIOD_US}`]]
    : [
        ['cpu.cfs_period_us', String(CPU_PERIOD_US)],
        ['cpu.cfs_quota_us', quota],
      ];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Per-instance (and per-build) cgroups under <hierarchy>/slipway/<name>. */
export class Cgroups {
  constructor(
    readonly version: 'v1' | 'v2',
    readonly hierarchies: Hierarchy[],
  ) {}

  /** Whether any hierarchy carries `controller`. */
  has(controller: Controller): boolean {
    return this.hierarchies.some((h) => h.controllers.includes(controller));
  }

  /**
   * Creates the group in every hierarchy with `limits` applied; returns its dirs (one per hierarchy). A `background`
   * group (a build) gets an eighth of the default CPU weight: the API and the apps come first.
   */
  create(name: string, limits: Limits, opts: { background?: boolean } = {}): string[] {
    if (!/^[\w.-]+$/.test(name)) throw new Error(`invalid cgroup name ${JSON.stringify(name)}`);
    const dirs: string[] = [];
    try {
      for (const hierarchy of this.hierarchies) {
        const dir = path.join(hierarchy.root, PARENT, name);
        mkdirSync(dir, { recursive: true });
        dirs.push(dir);
        for (const [file, value] of limitFiles(this.version, hierarchy, limits, opts.background))
          writeFileSync(path.join(dir, file), value);
      }
      return dirs;
    } catch (err) {
      for (const dir of dirs) rmdirSync(dir); // empty: nothing joined it yet
      throw err;
    }
  }

  /** Gives the group (its dirs, from create()) `millicores` of CPU time from now on; a group that is gone is skipped. */
  setCpu(dirs: string[], millicores: number): void {
    for (const hierarchy of this.hierarchies.filter((h) => h.controllers.includes('cpu')))
      for (const dir of dirs.filter((d) => d.startsWith(path.join(hierarchy.root, PARENT) + path.sep)))
        for (const [file, value] of cpuFiles(this.version, millicores))
          try {
            writeFileSync(path.join(dir, file), value);
          } catch {
            // the instance exited and its group went
          }
  }

  /** The group dirs `pid` is in, if it is in one of ours. */
  groupOf(pid: number): string[] {
    let lines: string[];
    try {
      lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
    } catch {
      return [];
    }
    // A container engine's groups sit below the instance's (…/<instance>/libpod-<id>): the instance's is the one.
    const name = lines.map((line) => new RegExp(`/${PARENT}/([\\w.-]+)(/[\\w./-]*)?$`).exec(line)?.[1]).find(Boolean);
    return name ? this.hierarchies.map((h) => path.join(h.root, PARENT, name)) : [];
  }

  /** Pids listed in the group. */
  members(dirs: string[]): number[] {
    const pids = new Set<number>();
    for (const dir of withChildren(dirs)) {
      try {
        readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
          .split('\n')
          .filter(Boolean)
          .forEach((pid) => pids.add(Number(pid)));
      } catch {
        // group already removed
      }
    }
    return [...pids];
  }

  /**
   * Removes empty groups left by instances that exited while no Slipway was running (or by a
   * build killed with it). Only groups older than `minAgeMs`: another Slipway on this machine
   * may have just created one its process has not joined yet.
   */
  sweepEmpty(minAgeMs = 60_000): number {
    let removed = 0;
    for (const hierarchy of this.hierarchies) {
      const parent = path.join(hierarchy.root, PARENT);
      let names: string[] = [];
      try {
        names = readdirSync(parent, { withFileTypes: true })
          .filter((e) => e.isDirectory())
          .map((e) => e.name);
      } catch {
        continue;
      }
      for (const name of names) {
        const dir = path.join(parent, name);
        try {
          if (Date.now() - statSync(dir).mtimeMs < minAgeMs) continue;
          rmdirSync(dir); // refused (EBUSY) while a process is in it
          removed++;
        } catch {
          // in use, or already gone
        }
      }
    }
    return removed;
  }

  /** Removes the group, waiting up to `waitMs` for its last processes to leave; returns the dirs that could not be removed. */
  async remove(dirs: string[], waitMs = 2000): Promise<string[]> {
    const deadline = Date.now() + waitMs;
    let left = withChildren(dirs);
    for (;;) {
      left = left.filter((dir) => {
        try {
          rmdirSync(dir);
          return false;
        } catch (err) {
          return (err as NodeJS.ErrnoException).code !== 'ENOENT';
        }
      });
      if (left.length === 0 || Date.now() >= deadline) return left;
      await sleep(50);
    }
  }
}

/** The groups a container engine made below these (conmon's, the container's), then these: children go first. */
function withChildren(dirs: string[]): string[] {
  const children = dirs.flatMap((dir) => {
    try {
      return readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => path.join(dir, e.name));
    } catch {
      return [];
    }
  });
  return [...children, ...dirs];
}

/** The dirs of group `name` (an instance id, or a build's name) in every hierarchy, whether or not it still exists. */
export const groupDirsOf = (cgroups: Cgroups, name: string) =>
  cgroups.hierarchies.map((h) => path.join(h.root, PARENT, name));

/** The group `name` as a container engine's cgroup parent names it (relative to each hierarchy's root). */
export const groupPathOf = (name: string) => `/${PARENT}/${name}`;

/** A cgroup file's number (`key` given: from its `key value` line); undefined when the file or the key is missing. */
function statOf(file: string, key?: string): number | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    if (key === undefined) return Number(text);
    const line = text.split('\n').find((l) => l.startsWith(`${key} `));
    return line === undefined ? undefined : Number(line.slice(key.length + 1));
  } catch {
    return undefined;
  }
}

/**
 * Whether the kernel's OOM killer killed a process of the group (read before the group is removed).
 * v2's memory.events and v1's memory.oom_control count the kills (oom_kill); v1 kernels before 4.13
 * lack that counter, and there a group that hit its limit (memory.failcnt) and a death by SIGKILL
 * (`diedOfSigkill`) has to do.
 */
export function oomKilled(dirs: string[], diedOfSigkill = false): boolean {
  for (const dir of dirs) {
    const kills =
      statOf(path.join(dir, 'memory.events'), 'oom_kill') ?? statOf(path.join(dir, 'memory.oom_control'), 'oom_kill');
    if (kills !== undefined) return kills > 0;
    const failcnt = diedOfSigkill ? statOf(path.join(dir, 'memory.failcnt')) : undefined;
    if (failcnt !== undefined) return failcnt > 0;
  }
  return false;
}
