import { copyFileSync, statSync, truncateSync } from 'node:fs';

/** How large a datastore server's own log may grow before it is rotated. */
export const SERVER_LOG_MAX_BYTES = 10 * 1024 * 1024;

/**
 * Keeps a log that a detached server appends to (opened O_APPEND) under `maxBytes`: past it, the
 * log is copied to `<file>.1` (replacing the last copy) and truncated in place, and the server goes
 * on writing at its new start. A line written between the copy and the truncate is lost.
 */
export function rotateLogIfLarge(file: string, maxBytes = SERVER_LOG_MAX_BYTES): boolean {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return false; // not written yet
  }
  if (size <= maxBytes) return false;
  copyFileSync(file, `${file}.1`);
  truncateSync(file, 0);
  return true;
}
