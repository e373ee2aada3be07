import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { killGroup, spawnDetached } from '../../lib/exec.js';
import { rotateLogIfLarge } from '../../lib/log-file.js';
import { isRunning, readStat } from '../../runtime/local/proc.js';
import { recordedProcess, runningProcess, type RecordedProcess } from '../process-state.js';
import { createServerNetworking, LOOPBACK, type Listener, type ServerNetwork } from '../server-network.js';
import { PortTakenError, type KeyValueProvisioner, type KeyValueSpec, type Placement } from '../types.js';
import { withSocketPath } from '../unix-socket.js';
import { ADMIN_USER, assertKeyValueSpec, ownServerRules } from './acl.js';
import { answersPing, withConnection, type Login } from './connection.js';
import { logSince } from '../server-output.js';
import { backgroundSave, copySnapshot, SNAPSHOT_FILE } from './snapshot.js';
import { datastoreFiles, prepare, readAdminPassword, serverCommand, type Files, type RunAs } from './server-files.js';

/**
 * One Redis-protocol server process per datastore, detached from Slipway (it outlives a control-plane restart
 * and is re-adopted by pid + start time), run as an unprivileged user when Slipway is root. Its files: server-files.ts.
 * Clients get its TCP address: in a namespace of its own at 6379 (namespaces mode, see server-network.ts), or
 * 127.0.0.1 at a port of its own (shared network). Slipway itself (readiness, checks, live config) talks to it only on
 * its unix socket.
 */

/** Where a server with a namespace of its own listens. */
const REDIS_PORT = 6379;
const SERVER_NAMES = ['valkey-server', 'redis-server'];
/** Loading a large AOF takes a while; the server answers LOADING until it is done. */
const START_TIMEOUT_MS = 60_000;
/** A graceful shutdown flushes the AOF; after this long the server is killed. */
const STOP_TIMEOUT_MS = 15_000;
const POLL_MS = 10;
/** What the server logs when its TCP port is someone else's. */
const PORT_TAKEN = /Could not create server TCP listening socket .*Address already in use/i;
/** The server's last log lines, for a failure's reason. */
const lastLines = (files: Files) => logSince(files.log, 0).split('\n').slice(-5).join('\n') || '(no output)';

type ServerProcess = RecordedProcess;

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

/** The last launch: its process and where it listens (records of older Slipways have no host: they listened on loopback). */
function readServerRecord(files: Files): (ServerProcess & { host: string; port: number }) | undefined {
  try {
    const record = JSON.parse(readFileSync(files.serverRecord, 'utf8')) as { host?: unknown; port?: unknown };
    const proc = recordedProcess(record);
    return proc && typeof record.port === 'number'
      ? { ...proc, host: typeof record.host === 'string' ? record.host : LOOPBACK, port: record.port }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The datastore's server if it runs, and where it listens: the one in the placement, or the last one launched (a
 * create or start whose placement was never saved). Where it listens is the record's, when it is the recorded launch.
 */
function runningServer(
  files: Files,
  placement: Pick<Placement, 'host' | 'port' | 'state'>,
): { proc: ServerProcess; at: { host: string; port: number } } | undefined {
  const record = readServerRecord(files);
  const remembered = recordedProcess(placement.state);
  if (remembered && isRunning(remembered)) {
    const recorded = record?.pid === remembered.pid && record.startTime === remembered.startTime;
    return { proc: remembered, at: recorded ? record : placement };
  }
  return record && isRunning(record) ? { proc: record, at: record } : undefined;
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
  const output = execFileSync(serverPath, ['--version'], {
    encoding: 'utf8',
    timeout: 5000,
    env: {},
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const version = /\bv=(\d\S*)/.exec(output)?.[1];
  if (!version) throw new Error(`${serverPath} --version did not print a version: ${output.trim()}`);
  return version;
}

export function createLocalKeyValue(opts: {
  dataDir: string;
  runAs?: RunAs | undefined;
  serverPath?: string;
  network?: ServerNetwork | undefined;
}): KeyValueProvisioner {
  const found = opts.serverPath ?? findKeyValueServer();
  if (!found) throw new Error(`neither ${SERVER_NAMES.join(' nor ')} was found on the PATH`);
  const serverPath = found;
  const version = binaryVersion(serverPath);
  const net = createServerNetworking(opts.network, REDIS_PORT);
  const filesOf = (spec: KeyValueSpec) => datastoreFiles(opts.dataDir, spec.id);
  const adminLogin = (files: Files): Login => ({ user: ADMIN_USER, password: readAdminPassword(files) });
  /**
   * Slipway talks to its servers only on their unix socket (0700, in the run user's 0700 data dir, inside Slipway's
   * 0700 dir): nobody else can bind it, so the passwords sent there reach the server. Never to the TCP port, which
   * anyone on the machine may have bound while the server was down.
   */
  const onSocket = <T>(files: Files, login: Login, fn: (redis: Redis) => Promise<T>) =>
    withSocketPath(files.socket, (socketPath) => withConnection({ path: socketPath }, login, fn));
  const answersOnSocket = (files: Files, login: Login, timeoutMs?: number) =>
    withSocketPath(files.socket, (socketPath) => answersPing({ path: socketPath }, login, timeoutMs)).catch(
      () => false,
    );

  async function launch(files: Files, listen: Listener): Promise<ServerProcess> {
    // Node reaps it if it exits while Slipway runs; waitReady notices and reports its output.
    const pid = await spawnDetached(
      listen.wrap(serverCommand(serverPath, files.data, opts.runAs)),
      { stdoutPath: files.log, stderrPath: files.log },
      () => undefined,
    );
    const proc = { pid, startTime: readStat(pid)?.startTime ?? '' };
    writeFileSync(files.serverRecord, `${JSON.stringify({ ...proc, host: listen.host, port: listen.port })}\n`);
    return proc;
  }

  /** Until it answers on its socket; a server that exits because its TCP port is taken is a PortTakenError. */
  async function waitReady(
    spec: KeyValueSpec,
    files: Files,
    port: number,
    proc: ServerProcess,
    logFrom: number,
  ): Promise<void> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    const login = adminLogin(files);
    while (!(await answersOnSocket(files, login, 1000))) {
      if (!isRunning(proc)) {
        if (PORT_TAKEN.test(logSince(files.log, logFrom)))
          throw new PortTakenError(
            port,
            `the port ${port} of the key-value server of ${spec.id} is taken by another process`,
          );
        throw new Error(`the key-value server of ${spec.id} exited while starting:\n${lastLines(files)}`);
      }
      if (Date.now() > deadline)
        throw new Error(
          `the key-value server of ${spec.id} did not answer within ${START_TIMEOUT_MS / 1000} s:\n${lastLines(files)}`,
        );
      await sleep(POLL_MS);
    }
  }

  /** Adopts the running server (where it listens) or launches one from the dir, and waits until it answers. */
  async function serve(spec: KeyValueSpec, placement: Pick<Placement, 'host' | 'port' | 'state'>): Promise<Placement> {
    assertKeyValueSpec(spec);
    const files = filesOf(spec);
    const running = runningServer(files, placement);
    const logFrom = statSync(files.log, { throwIfNoEntry: false })?.size ?? 0;
    if (running && existsSync(files.socket) && net.fits(running.at.host)) {
      const adopted = net.running(spec, running.at);
      await waitReady(spec, files, adopted.port, running.proc, logFrom);
      return net.placement(adopted, { pid: running.proc.pid, startTime: running.proc.startTime });
    }
    // Started by an older Slipway with no socket in its config (Slipway talks to it only there), or on the other
    // network (Slipway's network mode changed since): restarted.
    if (running) await stopServer(running.proc);
    const listen = await net.listen(spec, placement);
    try {
      prepare(files, spec, listen, opts.runAs);
      const proc = await launch(files, listen);
      await waitReady(spec, files, listen.port, proc, logFrom);
      return net.placement(listen, { pid: proc.pid, startTime: proc.startTime });
    } catch (err) {
      // A server still loading its data keeps its namespace: the next attempt adopts it.
      if (!runningServer(files, { host: listen.host, port: listen.port, state: {} })) await net.release(spec.id);
      throw err;
    }
  }

  const serveFresh = (spec: KeyValueSpec) => net.startFresh((at) => serve(spec, at));

  async function stop(spec: KeyValueSpec, placement: Placement): Promise<void> {
    const running = runningServer(filesOf(spec), placement);
    if (running) await stopServer(running.proc);
    await net.release(spec.id);
  }

  return {
    kind: 'local',
    versions: () => [version],

    async create(spec) {
      // A create cut short may have left its server running: keep that one (where it listens).
      const record = readServerRecord(filesOf(spec));
      return record && isRunning(record) ? serve(spec, { ...record, state: {} }) : serveFresh(spec);
    },

    start: (spec, placement) => serve(spec, placement),
    stop,
    async check(spec, placement) {
      const files = filesOf(spec);
      rotateLogIfLarge(files.log); // the check runs every few seconds: the log's size is kept here
      // Its clients are told where it listens: not so after a start whose placement was never saved, or on the other network.
      const at = runningServer(files, placement)?.at;
      if (!net.fits(placement.host) || (at && (at.host !== placement.host || at.port !== placement.port))) return false;
      return answersOnSocket(files, { user: spec.user, password: spec.password });
    },

    /**
     * Live: CONFIG SET and ACL SETUSER (a changed password too), and the config file for the next start. No restart:
     * turning persistence on writes the append-only file from memory in the background.
     */
    async update(spec, placement) {
      assertKeyValueSpec(spec);
      const files = filesOf(spec);
      const running = runningServer(files, placement);
      prepare(files, spec, running?.at ?? placement, opts.runAs);
      if (!running) return placement;
      await onSocket(files, adminLogin(files), async (redis) => {
        await redis.call(
          'CONFIG',
          'SET',
          'maxmemory',
          `${spec.size.memoryMb}mb`,
          'maxmemory-policy',
          spec.maxmemoryPolicy,
          'maxclients',
          String(spec.size.maxConnections),
          'appendonly',
          spec.persistent ? 'yes' : 'no',
        );
        await redis.call('ACL', 'SETUSER', spec.user, ...ownServerRules(spec.password));
      });
      return placement;
    },

    async destroy(spec, placement) {
      await stop(spec, placement);
      rmSync(filesOf(spec).dir, { recursive: true, force: true });
    },

    /** Its port was bound by someone else while it was down (shared network): the config is rewritten for a new one, and it starts there. */
    relocate: (spec) => serveFresh(spec),
    serverProcess: (placement) => runningProcess(placement.state),

    /** A point-in-time snapshot (snapshot.ts), copied out of the server's dir. */
    async dump(spec, placement, file) {
      const files = filesOf(spec);
      if (!runningServer(files, placement)) throw new Error('the key-value server is not running');
      await onSocket(files, adminLogin(files), backgroundSave);
      await copySnapshot(path.join(files.data, SNAPSHOT_FILE), file);
    },
  };
}
