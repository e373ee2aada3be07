import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** One process as the sampler sees it: its parent and cumulative CPU and memory. */
export interface ProcUsage {
  ppid: number;
  /** utime + stime + cutime + cstime, in clock ticks: children reaped by a process move into its cutime/cstime, so the tree total never drops when one exits. */
  cpuTicks: number;
  rssBytes: number;
  /** Field 22, with the pid the identity of a process (pid reuse). */
  startTime: string;
}

/**
 * USER_HZ, the unit of /proc's CPU times: part of the kernel's ABI and 100 on every
 * architecture Node runs on (sysconf(_SC_CLK_TCK)), so it is not looked up per machine.
 */
export const CLOCK_TICKS_PER_SECOND = 100;

function parseStat(text: string) {
  // comm is in parentheses and may itself contain spaces and parentheses.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
  const num = (i: number) => Number(f[i] ?? 0);
  // Fields 14-17 (utime, stime, cutime, cstime) are f[11..14]; 22 starttime f[19]; 24 rss (pages) f[21].
  return { ppid: num(1), cpuTicks: num(11) + num(12) + num(13) + num(14), startTime: f[19] ?? '', rssPages: num(21) };
}

/** Bytes per page, from our own process: /proc/self/status VmRSS (kB) over /proc/self/stat rss (pages). */
function detectPageSize(): number {
  try {
    const vmRssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
    const pages = parseStat(readFileSync('/proc/self/stat', 'utf8')).rssPages;
    const ratio = (vmRssKb * 1024) / pages;
    return 2 ** Math.round(Math.log2(ratio)) || 4096; // a power of two; VmRSS and rss are read a moment apart
  } catch {
    return 4096;
  }
}
export const PAGE_SIZE = detectPageSize();

/** Every process on the machine, read once (one /proc/<pid>/stat each): a sampler tick costs one scan whatever the number of instances. */
export function scanProcesses(): Map<number, ProcUsage> {
  const all = new Map<number, ProcUsage>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const s = parseStat(readFileSync(`/proc/${name}/stat`, 'utf8'));
      all.set(Number(name), {
        ppid: s.ppid,
        cpuTicks: s.cpuTicks,
        rssBytes: s.rssPages * PAGE_SIZE,
        startTime: s.startTime,
      });
    } catch {
      // exited between readdir and read
    }
  }
  return all;
}

/** Parent pid -> children, for walking trees. */
export function childrenIndex(processes: Map<number, ProcUsage>): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const [pid, p] of processes) {
    const list = children.get(p.ppid);
    if (list) list.push(pid);
    else children.set(p.ppid, [pid]);
  }
  return children;
}

/** CPU ticks and RSS of `pid` and everything below it; undefined when `pid` is gone or is another process now. */
export function treeUsage(
  processes: Map<number, ProcUsage>,
  children: Map<number, number[]>,
  root: { pid: number; startTime: string | null },
): { cpuTicks: number; rssBytes: number } | undefined {
  const top = processes.get(root.pid);
  if (!top || (root.startTime && top.startTime !== root.startTime)) return undefined;
  let cpuTicks = 0;
  let rssBytes = 0;
  const queue = [root.pid];
  for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
    const p = processes.get(pid);
    if (!p) continue;
    cpuTicks += p.cpuTicks;
    rssBytes += p.rssBytes;
    queue.push(...(children.get(pid) ?? []));
  }
  return { cpuTicks, rssBytes };
}

/** Seconds since boot (the clock of field 22). */
export function uptimeSeconds(): number {
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
}

/** Memory cgroup mount points: v2 (memory.current) and v1's memory hierarchy (memory.usage_in_bytes). */
function memoryMounts(): { v2?: string; v1?: string } {
  const found: { v2?: string; v1?: string } = {};
  try {
    for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
      const [, root, type, options] = line.split(' ');
      if (type === 'cgroup2' && !found.v2) found.v2 = root;
      if (type === 'cgroup' && options?.split(',').includes('memory')) found.v1 = root;
    }
  } catch {
    // no /proc/self/mounts: no cgroup figures
  }
  return found;
}
let mounts: ReturnType<typeof memoryMounts> | undefined;

/**
 * The file holding the memory use of the Slipway cgroup `pid` is in (the runtime puts each
 * instance in `<hierarchy>/slipway/<name>`), or undefined when it is in none of ours.
 */
export function cgroupMemoryFile(pid: number): string | undefined {
  mounts ??= memoryMounts();
  let lines: string[];
  try {
    lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  for (const line of lines) {
    const [, controllers, group] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (!group || !/\/slipway\/[\w.-]+$/.test(group)) continue;
    if (controllers === '' && mounts.v2) return path.join(mounts.v2, group, 'memory.current');
    if (controllers?.split(',').includes('memory') && mounts.v1)
      return path.join(mounts.v1, group, 'memory.usage_in_bytes');
  }
  return undefined;
}

export function readNumberFile(file: string): number | undefined {
  try {
    const value = Number(readFileSync(file, 'utf8').trim());
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
