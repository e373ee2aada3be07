import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';

/**
 * Gives the calling thread the least CPU priority (nice 19), not the process's: for worker threads that parse what a
 * tenant uploads, so that a file that takes a core for seconds yields it to the API and to other workspaces' deploys.
 * Linux applies setpriority to one thread when given its thread id, which /proc/thread-self names. Elsewhere, or
 * when it cannot, nothing changes.
 */
export function lowerThreadPriority(): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, constants.priority.PRIORITY_LOW);
    return true;
  } catch {
    return false;
  }
}
