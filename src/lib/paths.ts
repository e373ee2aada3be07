import { closeSync, constants, existsSync, fstatSync, openSync, readSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository/package root, found from this file whether it runs from src/ or dist/src/. */
function findPackageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
}

export const PACKAGE_ROOT = findPackageRoot();

/** Others may pass through by name, not list: the data dir, and every dir between it and an app's own dirs. */
export const TRAVERSE_ONLY = 0o711;

/** A path written relative to a source (rootDir, publishPath, a blueprint's file): never absolute, never up and out. */
export const isRelativeInside = (p: string) => !p.startsWith('/') && !p.split('/').includes('..') && !p.includes('\0');

/**
 * `dir`'s real path (symlinks resolved) when it exists and lies inside `root`; else why not. Paths an app controls
 * (rootDir, publishPath, a build's files) are read only through this: a link could lead to the data dir or `/`.
 */
export function realPathInside(root: string, dir: string): string | 'missing' | 'outside' {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return 'missing';
  }
  const realRoot = realpathSync(root);
  return real === realRoot || real.startsWith(realRoot + path.sep) ? real : 'outside';
}

/**
 * The first `maxBytes` of a small file that an app may have replaced, or undefined: never through a symlink (which
 * could lead to any file of the host's), never a FIFO or device (whose open or read would block the event loop for
 * ever), never more than `maxBytes` read (a file it grew to gigabytes).
 */
export function readSmallFile(file: string, maxBytes: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const buffer = Buffer.alloc(maxBytes);
    return buffer.subarray(0, readSync(fd, buffer, 0, maxBytes, 0)).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
