import { chmodSync, lstatSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { TRAVERSE_ONLY } from '../../lib/paths.js';
import { fileTail } from '../../lib/file-tail.js';

/** The unprivileged user apps run as. */
export interface AppUser {
  uid: number;
  gid: number;
  name: string;
}

export const BWRAP_INSTALL = 'apt-get install bubblewrap';

/** By mode bits; the app user has no supplementary groups (setpriv --clear-groups). */
function allows(dir: string, user: AppUser, bit: 'r' | 'x'): boolean {
  const { mode, uid, gid } = statSync(dir);
  const shift = uid === user.uid ? 6 : gid === user.gid ? 3 : 0;
  return ((mode >> shift) & (bit === 'r' ? 4 : 1)) !== 0;
}

/** The dirs from / down to `dir`'s parent. */
const ancestors = (dir: string): string[] => {
  const above: string[] = [];
  for (let at = path.dirname(dir); !above.includes(at); at = path.dirname(at)) above.unshift(at);
  return above;
};

const isUnder = (dir: string, parent: string) => dir.startsWith(parent + path.sep);
const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/** Why the app user cannot get through `dir` (or read it, when `read`), with the fix; undefined when it can. */
function closedDirReason(dir: string, user: AppUser, read = false): string | undefined {
  if (allows(dir, user, 'x') && (!read || allows(dir, user, 'r'))) return undefined;
  return (
    `the app user ${user.name} cannot reach its files: ${dir} (mode ${octal(statSync(dir).mode)}) is closed to it. ` +
    `Without the bubblewrap sandbox apps reach their files through the data dir's permissions: move the data dir ` +
    `(SLIPWAY_DATA_DIR) under dirs other users may traverse, e.g. /var/lib/slipway, or install bubblewrap (${BWRAP_INSTALL})`
  );
}

/**
 * Without bwrap, an app running as the unprivileged user opens its files on the host by path. The dirs between the data
 * dir and them become traversable only (never listable: another service's dir is reached only by its random id), the
 * rest of the data dir stays closed (src/core/service-state/layout.ts). Dirs above the data dir are not Slipway's to change:
 * one that blocks the way is an error naming it and the fix, so the deploy says so instead of the app failing to load.
 * `dirs` themselves must be readable and traversable by the app user (its app dir, its home).
 */
export function openWayTo(dataDir: string, dirs: string[], user: AppUser): void {
  const root = realpathSync(dataDir);
  const owner = process.getuid?.();
  for (const given of dirs) {
    // By its real path: an app may plant symlinks in what it owns (its artifact, through rootDir), and Slipway runs as
    // root: a path through a link to /root must never be walked, let alone chmodded.
    // (A dir outside the data dir, like a build's $HOME under /tmp, is only checked, never opened.)
    const dir = realpathSync(given);
    // Opened only while every dir so far is Slipway's own: below the first one the app owns, it could swap a dir.
    let opening = true;
    for (const at of ancestors(dir)) {
      const stat = lstatSync(at);
      const ours = (at === root || isUnder(at, root)) && stat.isDirectory() && stat.uid === owner;
      if (isUnder(at, root) || at === root) opening &&= ours;
      if (opening && ours && (stat.mode & 0o777) !== TRAVERSE_ONLY) chmodSync(at, TRAVERSE_ONLY);
      else {
        const reason = closedDirReason(at, user);
        if (reason) throw new Error(reason);
      }
    }
    const reason = closedDirReason(dir, user, true);
    if (reason) throw new Error(reason);
  }
}

/** The first dir above `dataDir` (not Slipway's to open) that the app user cannot pass through, explained. */
export function dataDirUnreachable(dataDir: string, user: AppUser): string | undefined {
  for (const at of ancestors(path.resolve(dataDir))) {
    const reason = closedDirReason(at, user);
    if (reason) return reason;
  }
  return undefined;
}

/** How a file the app user may not read shows in its output (node: MODULE_NOT_FOUND for code it cannot load). */
const DENIED = /EACCES|EPERM|permission denied|MODULE_NOT_FOUND|Cannot find module/i;
/** Why an app that exited before it was healthy may have failed for lack of the sandbox, from its stderr; else undefined. */
export function permissionHint(stderrPath: string, user: AppUser): string | undefined {
  const line = fileTail(stderrPath)
    .split('\n')
    .find((l) => DENIED.test(l));
  if (!line) return undefined;
  return (
    `its output says ${JSON.stringify(line.trim().slice(0, 200))}: without the bubblewrap sandbox it runs as ` +
    `${user.name} and opens its files on the host, so it may have been refused one it needs (its files must be readable ` +
    `by ${user.name}, and every dir above the data dir traversable); install bubblewrap (${BWRAP_INSTALL})`
  );
}
