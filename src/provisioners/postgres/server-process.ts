import { readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { isLive, isRunning, readStat } from '../../runtime/local/proc.js';

/** A postmaster, known by pid and start time so that a reused pid is never taken for it. */
export interface ServerProcess {
  pid: number;
  startTime: string;
}

const POLL_MS = 20;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** postmaster.pid: pid, data dir, start time, port, socket dir, listen address, shared memory key, status. */
function readLockFile(pgdata: string): { pid: number; port: number; listen: string; status: string } | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  return Number.isInteger(pid) && pid > 0
    ? { pid, port: Number(lines[3]), listen: (lines[5] ?? '').trim(), status: (lines[7] ?? '').trim() }
    : undefined;
}

/** The live process `pid` is a postmaster of this data dir (its command line names it; backends rename themselves). */
function isPostmasterOf(pid: number, pgdata: string): ServerProcess | undefined {
  const stat = readStat(pid);
  if (!stat || !isLive(stat)) return undefined;
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
  return argv.includes('-D') && argv.includes(pgdata) ? { pid, startTime: stat.startTime } : undefined;
}

/**
 * The running server of this data dir: the one Slipway remembers (placement state) or, failing that (state lost
 * in a crash before it was saved), the postmaster its lock file names.
 */
export function findServer(pgdata: string, remembered: Partial<ServerProcess>): ServerProcess | undefined {
  const { pid, startTime } = remembered;
  if (typeof pid === 'number' && typeof startTime === 'string' && isRunning({ pid, startTime }))
    return { pid, startTime };
  const lock = readLockFile(pgdata);
  return lock ? isPostmasterOf(lock.pid, pgdata) : undefined;
}

/** Where the running server of this data dir listens (its first listen address, and port): what it is adopted at. */
export function listenOf(pgdata: string): { host: string; port: number } | undefined {
  const lock = readLockFile(pgdata);
  return lock?.port && lock.listen ? { host: lock.listen, port: lock.port } : undefined;
}

/**
 * Makes way for a new postmaster when no server of ours runs. Postgres itself takes over a lock file whose pid is dead
 * (after kill -9), but refuses one whose pid now belongs to another live process of its user (pid reuse after a
 * reboot, e.g. another datastore's server): that one is removed. The data stays guarded: postgres still refuses to
 * start while backends of the old server use its shared memory.
 */
export function clearForeignLockFile(pgdata: string): void {
  const lock = readLockFile(pgdata);
  if (!lock || isPostmasterOf(lock.pid, pgdata)) return;
  const stat = readStat(lock.pid);
  if (stat && isLive(stat)) rmSync(path.join(pgdata, 'postmaster.pid'), { force: true });
}

export const logSize = (logPath: string): number => statSync(logPath, { throwIfNoEntry: false })?.size ?? 0;

export type StartOutcome = { ready: true } | { ready: false; exited: boolean };

/** Waits until the postmaster reports `ready` in its lock file (what pg_ctl waits for), exits, or time runs out. */
export async function waitReady(pgdata: string, server: ServerProcess, timeoutMs: number): Promise<StartOutcome> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lock = readLockFile(pgdata);
    if (lock?.pid === server.pid && lock.status === 'ready') return { ready: true };
    if (!isRunning(server)) return { ready: false, exited: true };
    if (Date.now() >= deadline) return { ready: false, exited: false };
    await sleep(POLL_MS);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

async function waitGone(server: ServerProcess, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isRunning(server)) {
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
  return true;
}

/**
 * Postgres' own shutdown modes: `fast` (SIGINT: disconnect clients, checkpoint, exit) and `immediate` (SIGQUIT: exit
 * at once, recover on next start). Escalates fast → immediate → SIGKILL when a step takes too long.
 */
export async function stopServer(server: ServerProcess, mode: 'fast' | 'immediate', graceMs = 60_000): Promise<void> {
  if (mode === 'fast') {
    signal(server.pid, 'SIGINT');
    if (await waitGone(server, graceMs)) return;
  }
  signal(server.pid, 'SIGQUIT');
  if (await waitGone(server, 10_000)) return;
  signal(server.pid, 'SIGKILL');
  if (!(await waitGone(server, 5000))) throw new Error(`postgres (pid ${server.pid}) is still running after SIGKILL`);
}
