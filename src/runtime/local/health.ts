import { closeSync, openSync, readSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';

export interface HealthCheck {
  host: string;
  port: number;
  /** HTTP GET this path (2xx/3xx is healthy); without it, a TCP connect is enough. */
  path?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Explains a failed check better than the last probe's error, when it can (e.g. "listens on loopback only"). */
  hint?(): string | undefined;
  /** The same for a process that exited before it was healthy (e.g. refused its own files without the sandbox). */
  exitHint?(): string | undefined;
}

// Probe often at first (most apps listen within a few hundred ms), then back off.
const FIRST_RETRY_MS = 10;
const MAX_RETRY_MS = 200;
/**
 * Every FIRST_RETRY_MS during this long, then doubling: most apps listen within a second, and a doubling schedule
 * from the start would find one that became ready at 45 ms only at 70 ms, one at 75 ms only at 150 ms.
 */
const STEADY_MS = 2000;
const PROBE_TIMEOUT_MS = 2000;
/**
 * How often a failing check asks `hint` whether the cause is already visible (an app that listens on its loopback
 * only): then it fails at once, not at the timeout, minutes later.
 */
const HINT_EVERY_MS = 1000;
/** The most of an app's socket table the hint reads (about 1,700 sockets). */
const SOCKET_TABLE_BYTES = 256 * 1024;

function httpProbe(host: string, port: number, path: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port, path, agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 400) resolve();
      else reject(new Error(`GET ${path} answered ${status}`));
    });
    req.once('timeout', () => req.destroy(new Error(`GET ${path} got no answer within ${timeoutMs} ms`)));
    req.once('error', reject);
  });
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('timeout', () => socket.destroy(new Error(`no TCP connection within ${timeoutMs} ms`)));
    socket.once('error', reject);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Probes host:port until it answers; rejects as soon as the process is gone, on timeout or on abort. */
export async function waitHealthy(check: HealthCheck, isAlive: () => boolean): Promise<void> {
  const deadline = Date.now() + check.timeoutMs;
  const target = check.path === undefined ? `port ${check.port}` : `http://${check.host}:${check.port}${check.path}`;
  let lastError = 'not probed yet';
  let retryMs = FIRST_RETRY_MS;
  const started = Date.now();
  let hintAt = started + HINT_EVERY_MS;
  for (;;) {
    check.signal?.throwIfAborted();
    if (!isAlive()) {
      const hint = check.exitHint?.();
      throw new Error(
        `the process exited before ${target} became healthy (last probe: ${lastError})${hint ? `: ${hint}` : ''}`,
      );
    }
    const probeMs = Math.max(1, Math.min(PROBE_TIMEOUT_MS, deadline - Date.now()));
    try {
      await (check.path === undefined
        ? tcpProbe(check.host, check.port, probeMs)
        : httpProbe(check.host, check.port, check.path, probeMs));
      return;
    } catch (err) {
      lastError = (err as Error).message || String(err);
    }
    if (check.hint && Date.now() >= hintAt) {
      const hint = check.hint();
      if (hint) throw new Error(`${target} cannot be reached (last probe: ${lastError}): ${hint}`);
      hintAt = Date.now() + HINT_EVERY_MS;
    }
    if (Date.now() >= deadline)
      throw new Error(
        `${target} was not healthy within ${check.timeoutMs} ms (last probe: ${lastError})${hintOf(check)}`,
      );
    await sleep(Math.min(retryMs, deadline - Date.now()));
    if (Date.now() - started >= STEADY_MS) retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
  }
}

const hintOf = (check: HealthCheck) => {
  const hint = check.hint?.();
  return hint ? `: ${hint}` : '';
};

/**
 * Why an app in a namespace of its own cannot be reached: it listens on its loopback only, which nothing outside
 * sees. Read from the namespace's own socket table (/proc/<pid>/net/tcp of a process inside it).
 */
export function loopbackOnlyHint(pid: number, host: string, port: number): string | undefined {
  if (host === '127.0.0.1') return undefined;
  const tcp = readCapped(`/proc/${pid}/net/tcp`);
  const tcp6 = readCapped(`/proc/${pid}/net/tcp6`);
  // Read every second during a health wait, on the event loop: an app that opened thousands of sockets gets no hint,
  // rather than megabytes parsed each second.
  if (!tcp || tcp.length >= SOCKET_TABLE_BYTES || tcp6.length >= SOCKET_TABLE_BYTES) return undefined;
  const table = tcp + tcp6;
  const portHex = port.toString(16).toUpperCase().padStart(4, '0');
  const loopback = ['0100007F', '00000000000000000000000001000000'].map((a) => `${a}:${portHex}`);
  const listening = table
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((c) => c[3] === '0A')
    .map((c) => c[1]);
  if (!listening.some((a) => a && loopback.includes(a))) return undefined;
  return `the app listens on localhost:${port} only; listen on 0.0.0.0 (all interfaces) so the router can reach it, as on Render`;
}

/** A /proc file (its size reads as 0, so it is read until its end), at most SOCKET_TABLE_BYTES; '' when unreadable. */
function readCapped(file: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const buffer = Buffer.alloc(SOCKET_TABLE_BYTES);
    let length = 0;
    for (let n = 1; n > 0 && length < buffer.length; length += n)
      n = readSync(fd, buffer, length, buffer.length - length, null);
    return buffer.toString('utf8', 0, length);
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
