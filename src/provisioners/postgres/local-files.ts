import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run, type Command } from '../../lib/exec.js';
import type { PostgresSpec } from '../types.js';
import type { Listener } from '../server-network.js';
import { writeRunUserFile } from '../server-output.js';
import type { PostgresInstall } from './binaries.js';
import {
  asRunUser,
  chownTreeCommand,
  copyTreeCommand,
  initdbCommand,
  syncCommand,
  type DirAccess,
  type RunContext,
  type RunUser,
} from './commands.js';
import { hbaConf, identConf, LOOPBACK_CLIENTS, postgresqlConf } from './server-files.js';

/**
 * Where one local datastore lives. `dir` is Slipway's (0700; the server's log); pgdata and the socket dir inside it are
 * the run user's, the only dirs it gets (so it cannot swap the log for a symlink that root would then write through).
 */
export interface DatastoreLayout {
  dir: string;
  pgdata: string;
  /** Where the server's unix socket is (the only way Slipway connects to it), named relative to pgdata in its config. */
  socketDir: string;
  log: string;
}

/** The longest name of the server's socket in its dir (`.s.PGSQL.<port>`). */
export const SOCKET_NAME_MAX = '.s.PGSQL.65535'.length;

export function datastoreLayout(dataDir: string, id: string): DatastoreLayout {
  const dir = path.join(dataDir, 'datastores', id);
  return {
    dir,
    pgdata: path.join(dir, 'pgdata'),
    socketDir: path.join(dir, 'socket'),
    log: path.join(dir, 'postgres.log'),
  };
}

async function runChecked(cmd: Command, what: string): Promise<void> {
  const result = await run(cmd, { timeoutMs: 120_000 });
  if (result.exitCode === 0) return;
  const how = result.timedOut ? 'timed out' : `exit ${result.exitCode ?? result.signal}`;
  throw new Error(`${what} failed (${how}): ${result.output.trim().slice(-2000)}`);
}

/** By mode bits; the run user has no supplementary groups (they are cleared when switching to it). */
function canTraverse(dir: string, user: RunUser): boolean {
  const { mode, uid, gid } = statSync(dir);
  if (uid === user.uid) return (mode & 0o100) !== 0;
  if (gid === user.gid) return (mode & 0o010) !== 0;
  return (mode & 0o001) !== 0;
}

const isUnder = (dir: string, parent: string) => dir.startsWith(parent + path.sep);

/**
 * How the run user gets to `own` (and `others`, e.g. a socket dir elsewhere): the topmost dir above `own` it cannot
 * traverse (the data dir, 0700, or one of its parents) is covered in its namespace, with only these dirs bound back.
 */
export function dirAccess(ctx: RunContext, own: string, others: string[] = []): DirAccess {
  const { runAs } = ctx;
  if (!runAs) return { hide: undefined, keep: [] };
  const above: string[] = [];
  for (let dir = path.dirname(own); !above.includes(dir); dir = path.dirname(dir)) above.unshift(dir);
  const hide = above.find((dir) => !canTraverse(dir, runAs));
  if (hide === '/') throw new Error(`the user ${runAs.uid} cannot traverse /`);
  return { hide, keep: hide ? [own, ...others.filter((dir) => isUnder(dir, hide) && !isUnder(dir, own))] : [] };
}

/** A 0700 dir, the run user's when `owned` (always inside a dir of Slipway's, so nobody else can swap it for a link). */
export function privateDir(ctx: RunContext, dir: string, owned: boolean): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (owned && ctx.runAs) chownSync(dir, ctx.runAs.uid, ctx.runAs.gid);
  chmodSync(dir, 0o700);
}

/**
 * Older Slipways aliased a socket dir whose path was too long as a link in the tmp dir; the server now names its
 * socket dir relative to pgdata and Slipway reaches it through an fd (unix-socket.ts). Such a link goes with its datastore.
 */
export function removeLegacySocketLink(id: string): void {
  const link = path.join(os.tmpdir(), `slipway-pg-${id}`);
  const found = lstatSync(link, { throwIfNoEntry: false });
  if (found?.isSymbolicLink() && found.uid === process.getuid?.()) rmSync(link);
}

/** Writes the server's config files; true when any changed (a running server needs a restart to see them). */
export function writeServerFiles(
  ctx: RunContext,
  spec: PostgresSpec,
  layout: DatastoreLayout,
  listen: Pick<Listener, 'host' | 'port' | 'internalHost'>,
  adminOsUser: string,
  backup: { archiveCommand?: string | undefined; backupOsUser?: string | undefined } = {},
): boolean {
  const files = {
    // Relative to pgdata, the server's cwd: short whatever the data dir's depth (a socket path must fit in 107 bytes).
    'postgresql.conf': postgresqlConf({
      listenAddress: listen.host,
      port: listen.port,
      socketDir: path.relative(layout.pgdata, layout.socketDir),
      size: spec.size,
      archiveCommand: backup.archiveCommand,
    }),
    'pg_hba.conf': hbaConf(spec, listen.internalHost ? ['samenet'] : LOOPBACK_CLIENTS),
    'pg_ident.conf': identConf(adminOsUser, backup.archiveCommand ? backup.backupOsUser : undefined),
  };
  let changed = false;
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(layout.pgdata, name);
    if (lstatSync(file, { throwIfNoEntry: false })?.isFile() && readFileSync(file, 'utf8') === text) continue;
    writeRunUserFile(file, text, ctx.runAs);
    changed = true;
  }
  return changed;
}

/**
 * initdb is most of the cost of a new server, so it runs once per major into a template cluster that every datastore
 * copies. A template exists only once complete (built aside, then renamed into place).
 */
export function createTemplates(ctx: RunContext) {
  const root = path.join(ctx.dataDir, 'datastores', '.templates');
  const building = new Map<string, Promise<string>>();

  async function build(install: PostgresInstall): Promise<string> {
    const dir = path.join(root, install.major);
    if (existsSync(dir)) return path.join(dir, 'pgdata');
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const work = `${dir}.building`;
    rmSync(work, { recursive: true, force: true }); // a build cut short
    privateDir(ctx, work, true);
    await runChecked(
      asRunUser(ctx, dirAccess(ctx, work), initdbCommand(install, path.join(work, 'pgdata'))),
      `initdb (PostgreSQL ${install.major})`,
    );
    renameSync(work, dir);
    return path.join(dir, 'pgdata');
  }

  /** The template's pgdata, built on first use (concurrent callers share one build). */
  function template(install: PostgresInstall): Promise<string> {
    let pending = building.get(install.major);
    if (!pending) {
      pending = build(install);
      building.set(install.major, pending);
      pending.catch(() => building.delete(install.major));
    }
    return pending;
  }

  /** A fresh cluster at layout.pgdata, copied from the template and flushed to disk; appears only once complete. */
  async function copyInto(install: PostgresInstall, layout: DatastoreLayout): Promise<void> {
    const from = await template(install);
    const work = `${layout.pgdata}.copy`;
    rmSync(work, { recursive: true, force: true });
    await runChecked(copyTreeCommand(from, work), 'copying the template cluster');
    if (ctx.runAs && statSync(work).uid !== ctx.runAs.uid)
      await runChecked(chownTreeCommand(work, ctx.runAs), 'handing the new cluster to its user');
    await runChecked(
      asRunUser(ctx, dirAccess(ctx, work), syncCommand(install, work)),
      'syncing the new cluster to disk',
    );
    renameSync(work, layout.pgdata);
  }

  return { copyInto };
}
