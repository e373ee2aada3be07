import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** The parts of /proc/<pid>/stat we use. */
export interface ProcStat {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  /** Field 22 (start time in clock ticks since boot): with the pid, identifies one process for good. */
  startTime: string;
}

export function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm is in parentheses and may itself contain spaces and parentheses.
  const commEnd = text.lastIndexOf(')');
  const fields = text.slice(commEnd + 2).split(' '); // fields[0] is field 3
  return {
    pid,
    comm: text.slice(text.indexOf('(') + 1, commEnd),
    state: fields[0] ?? '',
    ppid: Number(fields[1]),
    startTime: fields[19] ?? '',
  };
}

/** Not a zombie (exited, waiting to be reaped) nor dead. */
export const isLive = (stat: ProcStat): boolean => stat.state !== 'Z' && stat.state !== 'X';

/** Running: exists, is live, and is the same process (not a reused pid). */
export function isRunning(proc: Pick<ProcStat, 'pid' | 'startTime'>): boolean {
  const stat = readStat(proc.pid);
  return !!stat && isLive(stat) && stat.startTime === proc.startTime;
}

export function allProcesses(): ProcStat[] {
  const all: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    const stat = /^\d+$/.test(name) ? readStat(Number(name)) : undefined;
    if (stat) all.push(stat);
  }
  return all;
}

/** Every process below `pid` in the process tree (whatever session or group it moved to). */
export function descendantsOf(pid: number): ProcStat[] {
  const children = new Map<number, ProcStat[]>();
  for (const proc of allProcesses()) {
    const siblings = children.get(proc.ppid) ?? [];
    siblings.push(proc);
    children.set(proc.ppid, siblings);
  }
  const found: ProcStat[] = [];
  const queue = [pid];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const child of children.get(next) ?? []) {
      found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

/** Whether `pid` holds a file under `dir` open (its cwd and executable aside): who still writes a dir's logs. */
export function holdsFileUnder(pid: number, dir: string): boolean {
  const inside = `${dir.replace(/\/$/, '')}/`;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false; // gone, or not ours to read
  }
  return fds.some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(inside);
    } catch {
      return false;
    }
  });
}

/** Waits (polling) until none of `pids` is live, for at most `withinMs`. */
export async function waitGone(pids: number[], withinMs: number): Promise<void> {
  const live = (pid: number) => {
    const stat = readStat(pid);
    return !!stat && isLive(stat);
  };
  for (let waited = 0; waited < withinMs && pids.some(live); waited += 20) await new Promise((r) => setTimeout(r, 20));
}
