import { killGroup } from '../../lib/exec.js';
import type { InstanceHandle } from '../types.js';
import type { Cgroups } from './cgroups.js';
import { descendantsOf, isLive, isRunning, readStat, type ProcStat } from './proc.js';

type ProcessRef = Pick<InstanceHandle, 'pid' | 'startTime'>;

const POLL_MS = 50;
/** How long SIGKILLed processes get to disappear before stop gives up. */
const KILL_WAIT_MS = 5000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/**
 * Everything that belongs to an instance: the handle's process, all its descendants (apps calling setsid leave the
 * process group, so the group alone is not enough) and its cgroup's members (which also
 * catches daemons that reparented themselves away). Remembered by pid+startTime so a reused pid is never signalled.
 */
class InstanceProcesses {
  private readonly known = new Map<number, string>();
  constructor(
    private readonly handle: ProcessRef,
    private readonly cgroups: Cgroups | undefined,
    private readonly groupDirs: string[],
  ) {
    this.known.set(handle.pid, handle.startTime);
  }

  /** Rescans and returns what is still running. */
  running(): ProcStat[] {
    const found = isRunning(this.handle) ? descendantsOf(this.handle.pid) : [];
    for (const pid of this.cgroups?.members(this.groupDirs) ?? []) {
      const stat = readStat(pid);
      if (stat) found.push(stat);
    }
    for (const proc of found) this.known.set(proc.pid, proc.startTime);
    const running: ProcStat[] = [];
    for (const [pid, startTime] of this.known) {
      const stat = readStat(pid);
      if (stat && isLive(stat) && stat.startTime === startTime) running.push(stat);
      else this.known.delete(pid);
    }
    return running;
  }
}

/** Polls until nothing of the instance runs; false if `ms` passed first. `each` runs on what is left at every poll. */
async function waitGone(procs: InstanceProcesses, ms: number, each?: (left: ProcStat[]) => void): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = procs.running();
    if (left.length === 0) return true;
    if (Date.now() >= deadline) return false;
    each?.(left);
    await sleep(Math.min(POLL_MS, Math.max(1, deadline - Date.now())));
  }
}

/**
 * SIGTERM to every process of the instance, SIGKILL to the group and everything left after graceMs; resolves once
 * all are gone and the cgroup is removed. bwrap processes get no SIGTERM: they exit on their own once the app has,
 * and killing the outer one early would orphan the sandbox.
 */
export async function stopInstance(
  handle: ProcessRef,
  graceMs: number,
  cgroups: Cgroups | undefined,
): Promise<string[]> {
  if (!isRunning(handle)) return [];
  const groupDirs = cgroups?.groupOf(handle.pid) ?? [];
  const procs = new InstanceProcesses(handle, cgroups, groupDirs);
  // Each process gets one SIGTERM, when first seen: a stop right after the start (a job or cron run canceled at once)
  // may find only bwrap, or the sandbox's init before its reaper set its trap (an init drops a signal it has no handler
  // for), the app not started yet: the app gets its own SIGTERM once it appears, instead of running out the grace.
  // A program is known by its name too: a shell's child that got the SIGTERM between its fork and its exec ran the
  // shell's trap for it, and the program it then became gets one of its own.
  const termed = new Set<string>();
  const terminate = (left: ProcStat[]) => {
    for (const proc of left) {
      const key = `${proc.pid}:${proc.startTime}:${proc.comm}`;
      if (proc.comm === 'bwrap' || proc.comm === 'conmon' || termed.has(key)) continue;
      termed.add(key);
      signal(proc.pid, 'SIGTERM');
    }
  };
  terminate(procs.running());

  if (!(await waitGone(procs, graceMs, terminate))) {
    // Inside out: first everything but the handle's process (SIGKILLing bwrap's sandbox init takes its whole pid
    // namespace along), so that bwrap's outer process can reap it and exit by itself rather than orphan it; then the
    // handle's group and whatever is left, repeated each poll for anything forked between a scan and the kill.
    for (const proc of procs.running()) if (proc.pid !== handle.pid) signal(proc.pid, 'SIGKILL');
    await sleep(POLL_MS);
    const killAll = (left: ProcStat[]) => {
      // Only while the handle's process lives is its pid sure not to be some other process group's by now.
      if (isRunning(handle)) killGroup(handle.pid, 'SIGKILL');
      for (const proc of left) signal(proc.pid, 'SIGKILL');
    };
    if (!(await waitGone(procs, KILL_WAIT_MS, killAll))) {
      throw new Error(`processes of pid ${handle.pid} are still running ${KILL_WAIT_MS} ms after SIGKILL`);
    }
  }
  return cgroups ? cgroups.remove(groupDirs) : [];
}
