import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  accessSync, chownSync, closeSync, constants, fchownSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync,
} from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { killGroup, spawnDetached, type Command } from '../../lib/exec.js';
import { rotateLogIfLarge } from '../../lib/log-file.js';
import { freePort } from '../../runtime/local/ports.js';
import { isRunning, readStat } from '../../runtime/local/proc.js';
import type { KeyValueProvisioner, KeyValueSpec, Placement } from '../types.js';
import { ADMIN_USER, assertKeyValueSpec, ownServerRules, passwordHashRule } from './acl.js';
import { answersPing, withConnection, type Login, type ServerAddress } from './connection.js';

/**
 * One Redis-protocol server process per datastore, detached from Slipway (it outlives a control-plane restart
 * and is re-adopted by pid + start time), run as an unprivileged user when Slipway is root.
 *
 * Layout of <dataDir>/datastores/<id>/ (0700, Slipway's): admin.secret (the password Slipway logs in with for live
 * config changes), server.json (pid, start time, port of the last launch), server.log (the server's output), and
 * data/ (0700, the run user's): redis.conf (0600) and the AOF. The server is started with data/ as its cwd, entered
 * by Slipway (root) before it drops to the run user, and reads its config through /proc/self/cwd: so it needs no
 * permission on any dir above data/, and none of them is opened up for it (the run user is also the apps' user).
 */

const HOST = '127.0.0.1';
const SERVER_NAMES = ['valkey-server', 'redis-server'];
const CONFIG_VIA_CWD = '/proc/self/cwd/redis.conf';
/** Loading a large AOF takes a while; the server answers LOADING until it is done. */
const START_TIMEOUT_MS = 60_000;
/** A graceful shutdown flushes the AOF; after this long the server is killed. */
const STOP_TIMEOUT_MS = 15_000;
const POLL_MS = 10;

type RunAs = { uid: number; gid: number };
interface ServerProcess {
  pid: number;
  startTime: string;
}

/** valkey-server when on the PATH, else redis-server. */
export function findKeyValueServer(searchPath = process.env.PATH ?? ''): string | undefined {
  for (const name of SERVER_NAMES) {
    for (const dir of searchPath.split(':').filter(Boolean)) {
      const file = path.join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        return file;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

function datastoreFiles(dataDir: string, id: string) {
  const dir = path.join(dataDir, 'datastores', id);
  const data = path.join(dir, 'data');
  return {
    dir,
    data,
    config: path.join(data, 'redis.conf'),
    adminSecret: path.join(dir, 'admin.secret'),
    serverRecord: path.join(dir, 'server.json'),
    log: path.join(dir, 'server.log'),
  };
}
type Files = ReturnType<typeof datastoreFiles>;

/**
 * The whole server config, regenerated from the spec before every launch and on every update. Passwords are ACL
 * `user` lines with SHA-256 hashes (what `requirepass` sets for `default`), so the file holds no clear-text password.
 * spec.user `default` is the user clients log in as; any other name becomes an ACL user and `default` is disabled,
 * so a client must log in either way.
 */
export function serverConfig(spec: KeyValueSpec, port: number, adminPassword: string): string {
  const clientRules = ownServerRules(spec.password).join(' ');
  const users = spec.user === 'default' ? [`user default ${clientRules}`] : ['user default reset off', `user ${spec.user} ${clientRules}`];
  return [
    '# Written by Slipway before every launch and update of the datastore: change it through the API, not here.',
    'bind 127.0.0.1',
    `port ${port}`,
    'protected-mode yes',
    'daemonize no',
    'appendonly yes',
    'appendfsync everysec',
    'save ""',
    `maxmemory ${spec.size.memoryMb}mb`,
    `maxmemory-policy ${spec.maxmemoryPolicy}`,
    `maxclients ${spec.size.maxConnections}`,
    ...users,
    `user ${ADMIN_USER} reset on ${passwordHashRule(adminPassword)} ~* &* +@all`,
  ].join('\n') + '\n';
}

/** The server, with no arguments but where its config is and an empty environment (Slipway's holds secrets). */
export function serverCommand(serverPath: string, dataDir: string, runAs: RunAs | undefined): Command {
  return { file: serverPath, args: [CONFIG_VIA_CWD], cwd: dataDir, env: {}, ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) };
}

function readAdminPassword(files: Files): string {
  try {
    return readFileSync(files.adminSecret, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const password = randomBytes(24).toString('base64url');
  writeFileSync(files.adminSecret, `${password}\n`, { mode: 0o600, flag: 'wx' });
  return password;
}

/** Replaces a file in the run user's dir without following what that user may have put there (O_EXCL refuses a planted symlink). */
function writeServerFile(file: string, text: string, runAs: RunAs | undefined): void {
  const temp = `${file}.slipway-new`;
  rmSync(temp, { force: true });
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    if (runAs) fchownSync(fd, runAs.uid, runAs.gid);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
}

function prepare(files: Files, spec: KeyValueSpec, port: number, runAs: RunAs | undefined): void {
  mkdirSync(files.data, { recursive: true, mode: 0o700 });
  if (runAs) chownSync(files.data, runAs.uid, runAs.gid);
  writeServerFile(files.config, serverConfig(spec, port, readAdminPassword(files)), runAs);
}

const asServerProcess = (value: unknown): ServerProcess | undefined => {
  const { pid, startTime } = (value ?? {}) as Partial<ServerProcess>;
  return typeof pid === 'number' && typeof startTime === 'string' ? { pid, startTime } : undefined;
};

function readServerRecord(files: Files): (ServerProcess & { port: number }) | undefined {
  try {
    const record = JSON.parse(readFileSync(files.serverRecord, 'utf8')) as { port?: unknown };
    const proc = asServerProcess(record);
    return proc && typeof record.port === 'number' ? { ...proc, port: record.port } : undefined;
  } catch {
    return undefined;
  }
}

/** The datastore's server if it runs: the one in the placement, or the last one launched (a create that was cut short). */
function runningServer(files: Files, state: Record<string, unknown>): ServerProcess | undefined {
  return [asServerProcess(state), readServerRecord(files)].find((proc): proc is ServerProcess => !!proc && isRunning(proc));
}

function logTail(files: Files): string {
  try {
    return readFileSync(files.log, 'utf8').trimEnd().split('\n').slice(-5).join('\n');
  } catch {
    return '(no output)';
  }
}

async function waitGone(proc: ServerProcess, timeoutMs: number): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(POLL_MS)) {
    if (!isRunning(proc)) return true;
  }
  return !isRunning(proc);
}

/** SIGTERM is Redis' graceful SHUTDOWN (AOF flushed); SIGKILL for the whole group if it does not finish. */
async function stopServer(proc: ServerProcess): Promise<void> {
  try {
    process.kill(proc.pid, 'SIGTERM');
  } catch {
    return; // already gone
  }
  if (await waitGone(proc, STOP_TIMEOUT_MS)) return;
  killGroup(proc.pid, 'SIGKILL');
  if (!(await waitGone(proc, 5000))) throw new Error(`the key-value server (pid ${proc.pid}) does not stop`);
}

/**
 * `redis-server --version` prints e.g. "Redis server v=7.0.15 sha=…" (Valkey: "Valkey server v=8.0.2 …"). Run
 * synchronously, once at startup, because versions() is synchronous (as the Postgres provisioner does).
 */
function binaryVersion(serverPath: string): string {
  const output = execFileSync(serverPath, ['--version'], { encoding: 'utf8', timeout: 5000, env: {}, stdio: ['ignore', 'pipe', 'pipe'] });
  const version = /\bv=(\d\S*)/.exec(output)?.[1];
  if (!version) throw new Error(`${serverPath} --version did not print a version: ${output.trim()}`);
  return version;
}

export function createLocalKeyValue(opts: { dataDir: string; runAs?: RunAs | undefined; serverPath?: string }): KeyValueProvisioner {
  const found = opts.serverPath ?? findKeyValueServer();
  if (!found) throw new Error(`neither ${SERVER_NAMES.join(' nor ')} was found on the PATH`);
  const serverPath = found;
  const version = binaryVersion(serverPath);
  const filesOf = (spec: KeyValueSpec) => datastoreFiles(opts.dataDir, spec.id);
  const addressOf = (port: number): ServerAddress => ({ host: HOST, port, tls: false });
  const adminLogin = (files: Files): Login => ({ user: ADMIN_USER, password: readAdminPassword(files) });

  async function launch(files: Files, port: number): Promise<ServerProcess> {
    // Node reaps it if it exits while Slipway runs; waitReady notices and reports its output.
    const pid = await spawnDetached(serverCommand(serverPath, files.data, opts.runAs), { stdoutPath: files.log, stderrPath: files.log }, () => undefined);
    const proc = { pid, startTime: readStat(pid)?.startTime ?? '' };
    writeFileSync(files.serverRecord, `${JSON.stringify({ ...proc, port })}\n`);
    return proc;
  }

  async function waitReady(spec: KeyValueSpec, files: Files, port: number, proc: ServerProcess): Promise<void> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    const login = adminLogin(files);
    while (!(await answersPing(addressOf(port), login, 1000))) {
      if (!isRunning(proc)) throw new Error(`the key-value server of ${spec.id} exited while starting:\n${logTail(files)}`);
      if (Date.now() > deadline) throw new Error(`the key-value server of ${spec.id} did not answer within ${START_TIMEOUT_MS / 1000} s:\n${logTail(files)}`);
      await sleep(POLL_MS);
    }
  }

  /** Adopts the running server or launches one from the dir, and waits until it answers. */
  async function serve(spec: KeyValueSpec, port: number, state: Record<string, unknown>): Promise<Placement> {
    assertKeyValueSpec(spec);
    const files = filesOf(spec);
    let proc = runningServer(files, state);
    if (!proc) {
      prepare(files, spec, port, opts.runAs);
      proc = await launch(files, port);
    }
    await waitReady(spec, files, port, proc);
    return { host: HOST, port, state: { pid: proc.pid, startTime: proc.startTime } };
  }

  async function stop(spec: KeyValueSpec, placement: Placement): Promise<void> {
    const proc = runningServer(filesOf(spec), placement.state);
    if (proc) await stopServer(proc);
  }

  return {
    kind: 'local',
    versions: () => [version],

    async create(spec) {
      // A create cut short may have left its server running: keep that one (and its port).
      const record = readServerRecord(filesOf(spec));
      const port = record && isRunning(record) ? record.port : await freePort();
      return serve(spec, port, {});
    },

    start: (spec, placement) => serve(spec, placement.port, placement.state),
    stop,
    check(spec, placement) {
      rotateLogIfLarge(filesOf(spec).log); // the check runs every few seconds: the log's size is kept here
      return answersPing(addressOf(placement.port), { user: spec.user, password: spec.password });
    },

    /** Live: CONFIG SET and ACL SETUSER (a changed password too), and the config file for the next start. No restart. */
    async update(spec, placement) {
      assertKeyValueSpec(spec);
      const files = filesOf(spec);
      prepare(files, spec, placement.port, opts.runAs);
      if (!runningServer(files, placement.state)) return placement;
      await withConnection(addressOf(placement.port), adminLogin(files), async (redis) => {
        await redis.call('CONFIG', 'SET', 'maxmemory', `${spec.size.memoryMb}mb`, 'maxmemory-policy', spec.maxmemoryPolicy, 'maxclients', String(spec.size.maxConnections));
        await redis.call('ACL', 'SETUSER', spec.user, ...ownServerRules(spec.password));
      });
      return placement;
    },

    async destroy(spec, placement) {
      await stop(spec, placement);
      rmSync(filesOf(spec).dir, { recursive: true, force: true });
    },
  };
}
