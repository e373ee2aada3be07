import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_NETWORK_CIDR } from '../../src/config.js';
import { findProgram } from '../../src/runtime/local/capabilities.js';
import { removeNetworksOf } from '../../src/runtime/local/network/index.js';
import { killProcessesUnder } from './kill-under.js';
import { createTestDatabase, TEST_DATABASE_URL } from './server.js';

/** The repository root, where `src/main.ts` lives. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value; throws with `what` after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`,
      );
    await sleep(everyMs);
  }
}

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
  return {
    dataDir,
    databaseUrl: database?.url,
    env: { SLIPWAY_DATA_DIR: dataDir, ...(database ? { DATABASE_URL: database.url } : {}) },
    async remove() {
      await database?.drop();
      // Apps outlive Slipway, and the namespaces of its apps and builds are machine-wide: they go with the data dir.
      killProcessesUnder(dataDir);
      await removeNetworksOf(dataDir, DEFAULT_NETWORK_CIDR, findProgram);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
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
    env: { ...base, SLIPWAY_HOST: '127.0.0.1', SLIPWAY_LOG_LEVEL: 'info', ...env },
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

/** Waits until GET /api/health answers 200 (each attempt bounded, so a hung server cannot hang the test). */
export function waitForHealthy(url: string, timeoutMs = 20_000): Promise<Response> {
  return waitFor(
    `${url}/api/health to answer 200`,
    async () => {
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2000) });
      return res.status === 200 ? res : undefined;
    },
    timeoutMs,
  );
}

/** POSTs JSON on a connection of its own that closes after the reply (`Connection: close`, no keep-alive). */
export function postJsonOnce(url: string, body: unknown, timeoutMs = 15_000): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
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
    req.end(payload);
  });
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
