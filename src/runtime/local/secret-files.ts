import { chownSync, existsSync, lstatSync, mkdirSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { SecretFileSpec } from '../types.js';

/** Where the app reads its secret files (Render's path), in a sandbox or a container. */
export const SECRETS_MOUNT = '/etc/secrets';

/**
 * Writes a process's secret files into `dir`, replacing what was there (a file removed since the last start is gone):
 * the dir 0700 and each file 0400, owned by the user the app runs as (`owner`), so that only it reads them. Returns
 * the dir, or undefined when there are none. Names were checked by core (plain file names); checked again here, since
 * a `/` or `..` would write outside the dir.
 */
export function writeSecretFiles(
  dir: string,
  files: SecretFileSpec[] | undefined,
  owner: { uid: number; gid: number } | undefined,
): string | undefined {
  rmSync(dir, { recursive: true, force: true });
  if (!files?.length) return undefined;
  mkdirSync(dir, { mode: 0o700 });
  for (const f of files) {
    if (path.basename(f.name) !== f.name || f.name === '.' || f.name === '..' || f.name.includes('\0'))
      throw new Error(`secret file name ${JSON.stringify(f.name)} is not a plain file name`);
    const file = path.join(dir, f.name);
    writeFileSync(file, f.content, { mode: 0o400, flag: 'wx' });
    if (owner) chownSync(file, owner.uid, owner.gid);
  }
  if (owner) chownSync(dir, owner.uid, owner.gid);
  return dir;
}

/**
 * bwrap binds the host's /etc read-only, and cannot make a mount point in it: the host needs an (empty) /etc/secrets
 * to bind each instance's dir onto. Made once, when Slipway may (as root); else the start fails saying so.
 */
export function ensureSecretsMountPoint(): void {
  if (existsSync(SECRETS_MOUNT)) return;
  try {
    mkdirSync(SECRETS_MOUNT, { mode: 0o755 });
  } catch (err) {
    throw new Error(
      `secret files need an empty ${SECRETS_MOUNT} on this host to mount onto, and it could not be made ` +
        `(${(err as Error).message}): create it (mkdir -m 755 ${SECRETS_MOUNT})`,
    );
  }
}

/**
 * Render also puts a native app's secret files in its root dir. That dir is the artifact's, bound read-only, where bwrap
 * cannot make a mount point: each name gets an empty placeholder (0444) in the artifact if it has no file there, and
 * the secret is bound over it. A name the app's own tree has as a dir or a link is left to the app (a link's target
 * would be what got covered), and so is a root dir that leads out of the app dir. Returns the [secret, mount point] pairs.
 */
export function rootSecretBinds(secretsDir: string | undefined, root: string, appDir: string): [string, string][] {
  if (!secretsDir) return [];
  // The artifact is the build's, so the tenant's: a root dir that is a link out of it would have root write elsewhere.
  let real: string, realApp: string;
  try {
    [real, realApp] = [realpathSync(root), realpathSync(appDir)];
  } catch {
    return []; // no such root dir: the start fails on it, saying so
  }
  if (real !== realApp && !real.startsWith(realApp + path.sep)) return [];
  const binds: [string, string][] = [];
  for (const name of readdirSync(secretsDir)) {
    const target = path.join(root, name);
    const existing = lstatSync(target, { throwIfNoEntry: false });
    if (existing && !existing.isFile()) continue;
    if (!existing) {
      try {
        writeFileSync(target, '', { mode: 0o444, flag: 'wx' });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // another instance of the deploy made it
      }
    }
    binds.push([path.join(secretsDir, name), target]);
  }
  return binds;
}
