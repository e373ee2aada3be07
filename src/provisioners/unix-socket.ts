import { closeSync, constants, openSync } from 'node:fs';
import path from 'node:path';

/** sun_path holds 108 bytes, the last a NUL. */
export const SOCKET_PATH_MAX = 107;

/**
 * Runs `fn` with a name of `dir` under which a socket named up to `nameMax` bytes fits sun_path: `dir` itself when short
 * enough, else `/proc/self/fd/<n>`, an fd open on it (about 20 bytes whatever the data dir's depth). The kernel resolves
 * that through the open dir, so no alias is made anywhere (no link in a shared /tmp) and the socket stays reachable
 * only to who could open its dir. The fd is closed when `fn` settles (a connection made by then stays connected).
 */
export async function withSocketDir<T>(dir: string, nameMax: number, fn: (dirPath: string) => Promise<T>): Promise<T> {
  if (Buffer.byteLength(dir) + 1 + nameMax <= SOCKET_PATH_MAX) return fn(dir);
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    return await fn(`/proc/self/fd/${fd}`);
  } finally {
    closeSync(fd);
  }
}

/** withSocketDir for the one socket `file`. */
export const withSocketPath = <T>(file: string, fn: (socketPath: string) => Promise<T>): Promise<T> =>
  withSocketDir(path.dirname(file), Buffer.byteLength(path.basename(file)), (dir) =>
    fn(path.join(dir, path.basename(file))),
  );
