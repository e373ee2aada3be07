import { stopNginx } from '../../src/router/nginx/index.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_NETWORK_CIDR } from '../../src/app/config.js';
import { findProgram } from '../../src/runtime/local/capabilities.js';
import { removeNetworksOf } from '../../src/runtime/local/network/index.js';
import { sweepBuildDisks } from '../../src/runtime/local/build-disks.js';
import { killProcessesUnder } from './kill-under.js';
import { createTestDatabase, seedPglite, TEST_DATABASE_URL } from './server.js';

/** The repository root, where `src/main.ts` lives. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// Waiting and ports, without vitest: benches use them too.
import { waitFor } from './wait.js';
export { freePort, sleep, waitFor } from './wait.js';

/** Rejects when `promise` has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A temp data dir, plus a fresh database in Postgres mode, for servers started by hand. */
export async function freshStore(): Promise<{
  dataDir: string;
  databaseUrl: string | undefined;
  env: Record<string, string>;
  remove(): Promise<void>;
}> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-test-'));
  const database = TEST_DATABASE_URL ? await createTestDatabase(TEST_DATABASE_URL) : undefined;
  if (!database) seedPglite(dataDir);
  return {
    dataDir,
    databaseUrl: database?.url,
    env: { SLIPWAY_DATA_DIR: dataDir, ...(database ? { DATABASE_URL: database.url } : {}) },
    async remove() {
      await database?.drop();
      await removeDataDir(dataDir);
    },
  };
}

/**
 * Removes a killed Slipway's data dir with what lives outside it: apps outlive Slipway, and the namespaces of its
 * apps and builds (a ready build namespace from its first minute on) are machine-wide.
 */
export async function removeDataDir(dataDir: string): Promise<void> {
  await stopNginx(dataDir); // before the SIGKILLs below: a killed master would leave its workers serving
  killProcessesUnder(dataDir);
  await removeNetworksOf(dataDir, DEFAULT_NETWORK_CIDR, findProgram);
  await sweepBuildDisks(dataDir); // a build's disk stays mounted when Slipway is killed during it
  rmSync(dataDir, { recursive: true, force: true });
}

/** The pid of a process that has exited (so a lock file holding it is stale). */
export async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  const pid = child.pid!;
  expectDead(pid);
  return pid;
}

function expectDead(pid: number) {
  try {
    process.kill(pid, 0);
  } catch {
    return;
  }
  throw new Error(`pid ${pid} is unexpectedly alive`);
}

export interface SlipwayProcess {
  child: ChildProcess;
  /** Everything the process printed so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when stdout has a line matching `pattern`. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** SIGKILLs the process if it is still running and waits for it to exit. */
  kill(): Promise<void>;
}

/**
 * Runs Slipway as a real process, as a user would (`node --import tsx src/main.ts`), with
 * only the SLIPWAY_* / DATABASE_URL settings given here (none inherited from the test run).
 */
export function spawnSlipway(env: Record<string, string>): SlipwayProcess {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('SLIPWAY_') && k !== 'DATABASE_URL'),
  );
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO_ROOT,
    env: { ...base, SLIPWAY_HOST: '127.0.0.1', SLIPWAY_LOG_LEVEL: 'info', SLIPWAY_ROUTER_HTTPS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    for (const l of listeners) l();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      for (const l of listeners) l();
      resolve({ code, signal });
    });
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForOutput(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = out.split('\n').find((l) => pattern.test(l));
          if (line !== undefined) done(() => resolve(line));
          else if (child.exitCode !== null || child.signalCode !== null)
            done(() => reject(new Error(`process exited before printing ${pattern}\nstdout: ${out}\nstderr: ${err}`)));
        };
        const timer = setTimeout(
          () =>
            done(() =>
              reject(new Error(`no output matching ${pattern} within ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`)),
            ),
          timeoutMs,
        );
        const done = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      });
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * Waits until GET /api/health answers 200 (each attempt bounded, so a hung server cannot hang the test). A spawned
 * Slipway compiles its sources through tsx beside two other files' builds: 20 s was not always enough. How fast
 * Slipway starts is bench/start-timing.ts's figure, not the tests'.
 */
export function waitForHealthy(url: string, timeoutMs = 60_000): Promise<Response> {
  return waitFor(
    `${url}/api/health to answer 200`,
    async () => {
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2000) });
      return res.status === 200 ? res : undefined;
    },
    timeoutMs,
  );
}

/**
 * POSTs JSON on a connection of its own (`Connection: close`) and sends all of it but the body's last byte: the
 * request stays in flight, however fast the server is, until `finish()` sends that byte.
 */
export function postJsonHeld(
  url: string,
  body: unknown,
  timeoutMs = 15_000,
): { reply: Promise<{ status: number; body: any }>; finish(): void } {
  const payload = Buffer.from(JSON.stringify(body));
  let req!: http.ClientRequest;
  const reply = new Promise<{ status: number; body: any }>((resolve, reject) => {
    req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': payload.length },
        timeout: timeoutMs,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`POST ${url}: no reply within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
  req.write(payload.subarray(0, -1));
  return { reply, finish: () => void req.end(payload.subarray(-1)) };
}

export interface TcpProxy {
  port: number;
  /** Closes the listener and destroys every open connection: the target becomes unreachable (refused). */
  cut(): Promise<void>;
  /** Listens again on the same port (no-op when listening). */
  restore(): Promise<void>;
  /** Stops forwarding bytes, on open and new connections alike, without closing anything: the target hangs. */
  stall(): void;
  /** Forwards again whatever was held back. */
  resume(): void;
}

/** A TCP proxy to `target`, on 127.0.0.1, to make a service unreachable (or hang) and come back. */
export async function tcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  let server: net.Server | undefined;
  let port = 0;
  let stalled = false;
  const connect = ([a, b]: [net.Socket, net.Socket]) => {
    a.pipe(b);
    b.pipe(a);
  };
  const disconnect = ([a, b]: [net.Socket, net.Socket]) => {
    a.unpipe(b);
    b.unpipe(a);
    a.pause();
    b.pause();
  };
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        const pair: [net.Socket, net.Socket] = [client, upstream];
        const teardown = () => {
          pairs.delete(pair);
          for (const sock of pair) {
            sock.destroy();
            sockets.delete(sock);
          }
        };
        pairs.add(pair);
        for (const sock of pair) {
          sockets.add(sock);
          sock.on('error', teardown).on('close', teardown);
        }
        if (stalled) disconnect(pair);
        else connect(pair);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as AddressInfo).port;
        server = s;
        resolve();
      });
    });
  await listen();
  return {
    get port() {
      return port;
    },
    async cut() {
      const s = server;
      server = undefined;
      for (const sock of sockets) sock.destroy();
      sockets.clear();
      pairs.clear();
      if (s) await new Promise((resolve) => s.close(resolve));
    },
    async restore() {
      if (!server) await listen();
    },
    stall() {
      stalled = true;
      for (const pair of pairs) disconnect(pair);
    },
    resume() {
      stalled = false;
      for (const pair of pairs) connect(pair);
    },
  };
}
