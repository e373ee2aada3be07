import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from '../../lib/exec.js';
import type { PostgresInstall } from './binaries.js';

/** The unprivileged user the servers run as when Slipway runs as root (initdb and postgres refuse root). */
export interface RunUser {
  uid: number;
  gid: number;
}

/** util-linux programs that switch to the run user; looked up once. */
export interface SwitchUserTools {
  unshare: string;
  setpriv: string;
}

export const SUPERUSER = 'slipway-admin'; // not a valid datastore user name ([a-z0-9_]), so it can never clash with one

/** The name of the user `uid` (/etc/passwd), which peer authentication sees; undefined when it has none. */
export function userNameOf(uid: number): string | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [name, , id] = line.split(':');
      if (name && Number(id) === uid) return name;
    }
  } catch {
    // no passwd file: no name
  }
  return undefined;
}

export function findSwitchUserTools(): SwitchUserTools | undefined {
  const find = (name: string) =>
    ['/usr/bin', '/bin', '/usr/sbin', '/sbin'].map((dir) => path.join(dir, name)).find((file) => existsSync(file));
  const unshare = find('unshare');
  const setpriv = find('setpriv');
  return unshare && setpriv ? { unshare, setpriv } : undefined;
}

/** How the run user reaches its dirs: `hide` is the topmost dir above them it cannot traverse (none: it reaches them as is). */
export interface DirAccess {
  hide: string | undefined;
  /** The dirs it needs below `hide`. */
  keep: string[];
  /** A file bound at /etc/hosts (a server whose namespace has no resolver: its backups' endpoint, pinned). */
  hosts?: string | undefined;
}

/**
 * Runs as root in a private mount namespace: covers `hide` with an empty tmpfs, binds each kept dir back at its own
 * path (reached through an fd opened before the tmpfs covered it), then becomes the run user. So the run user reaches
 * its own dirs without any dir above them being opened to anyone (the data dir stays 0700, root's), and sees nothing
 * else under `hide`. Like bwrap's binds for app instances, with util-linux only. The pid stays the same through every
 * exec, so the spawned pid is the program's. Arguments: hide, uid, gid, setpriv, hosts (each may be empty), the kept
 * dirs, then the command.
 */
function keepOnlyScript(kept: number): string {
  const dirs = Array.from({ length: kept }, (_, i) => ({ fd: 3 + i, dir: `"\${${6 + i}}"` }));
  return [
    'set -e',
    'umask 022',
    ...dirs.map(({ fd, dir }) => `exec ${fd}<${dir}`),
    // Before the tmpfs: the file may be under `hide`.
    '[ -z "$5" ] || mount --no-canonicalize --bind "$5" /etc/hosts',
    '[ -z "$1" ] || mount -t tmpfs -o mode=0755,size=64k slipway-hidden "$1"',
    ...dirs.flatMap(({ fd, dir }) => [
      `mkdir -p ${dir}`,
      `mount --no-canonicalize --bind /proc/self/fd/${fd} ${dir}`,
      `exec ${fd}<&-`,
    ]),
    'uid=$2 gid=$3 setpriv=$4',
    `shift ${5 + kept}`,
    'exec "$setpriv" --reuid="$uid" --regid="$gid" --clear-groups --no-new-privs -- "$@"',
  ].join('\n');
}

/** Where commands run: as Slipway's own user (runAs unset), or as the run user. */
export interface RunContext {
  dataDir: string;
  runAs?: RunUser;
  tools?: SwitchUserTools;
}

export function asRunUser(ctx: RunContext, access: DirAccess, cmd: Command): Command {
  const { runAs } = ctx;
  if (!runAs) return cmd;
  if (!access.hide && !access.hosts) return { ...cmd, uid: runAs.uid, gid: runAs.gid };
  if (!ctx.tools)
    throw new Error('running Postgres as another user under a closed dir needs util-linux (unshare and setpriv)');
  const args = [
    access.hide ?? '',
    String(runAs.uid),
    String(runAs.gid),
    ctx.tools.setpriv,
    access.hosts ?? '',
    ...access.keep,
    cmd.file,
    ...cmd.args,
  ];
  return {
    ...cmd,
    file: ctx.tools.unshare,
    args: [
      '--mount',
      '--propagation',
      'private',
      '--',
      '/bin/sh',
      '-c',
      keepOnlyScript(access.keep.length),
      'slipway-postgres',
      ...args,
    ],
  };
}

/** The environment of every server program: nothing of Slipway's (its secrets stay out), a fixed locale. */
const SERVER_ENV = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };

/** The per-version template cluster; no fsync (it is copied, and each copy is synced). */
export const initdbCommand = (install: PostgresInstall, pgdata: string): Command => ({
  file: install.initdb,
  args: [
    '-D',
    pgdata,
    '-U',
    SUPERUSER,
    '--encoding=UTF8',
    '--locale=C.UTF-8',
    '--auth-local=peer',
    '--auth-host=scram-sha-256',
    '--no-sync',
  ],
  env: SERVER_ENV,
  cwd: '/',
});

/** Flushes a copied cluster to disk, so a machine crash right after create cannot leave it half-written. */
export const syncCommand = (install: PostgresInstall, pgdata: string): Command => ({
  file: install.initdb,
  args: ['--sync-only', '-D', pgdata],
  env: SERVER_ENV,
  cwd: '/',
});

/** The server; every setting is in its postgresql.conf (written by Slipway before each start). */
export const postgresCommand = (install: PostgresInstall, pgdata: string): Command => ({
  file: install.postgres,
  args: ['-D', pgdata],
  env: SERVER_ENV,
  cwd: '/',
});

/** A copy that keeps owners and modes (the template belongs to the run user already). */
export const copyTreeCommand = (from: string, to: string): Command => ({
  file: 'cp',
  args: ['-a', '--reflink=auto', '--', from, to],
  env: SERVER_ENV,
  cwd: '/',
});

export const chownTreeCommand = (dir: string, user: RunUser): Command => ({
  file: 'chown',
  args: ['-R', '--', `${user.uid}:${user.gid}`, dir],
  env: SERVER_ENV,
  cwd: '/',
});
