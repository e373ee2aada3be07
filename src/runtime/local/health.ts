import http from 'node:http';
import net from 'node:net';
import { judgeListeners, type Listener, type PortVerdict } from './listeners.js';

export interface HealthCheck {
  host: string;
  port: number;
  /** HTTP GET this path (2xx/3xx is healthy); without it, a TCP connect is enough. */
  path?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * The app's listening sockets, where the runtime can see them (a namespace of the app's own): a check that fails
   * looks at them to route to the port the app did open, or to fail at once when it listens on loopback only.
   */
  listeners?(): Listener[] | undefined;
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
 * How often a failing check reads the app's listeners (docs/deploys.md, "Port detection"): an app on loopback only
 * fails at once, not at the timeout minutes later; one on another port is routed there.
 */
const LISTENERS_EVERY_MS = 250;

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

/**
 * Probes host:port until it answers, and resolves with the port that did: another one when the app listens there and
 * not on `port` (seen at two reads in a row, so an app opening a side port first still gets its own). Rejects as soon
 * as the process is gone or listens on loopback only, on timeout, or on abort.
 */
export async function waitHealthy(check: HealthCheck, isAlive: () => boolean): Promise<{ port: number }> {
  const deadline = Date.now() + check.timeoutMs;
  let port = check.port;
  const target = () => (check.path === undefined ? `port ${port}` : `http://${check.host}:${port}${check.path}`);
  let lastError = 'not probed yet';
  let retryMs = FIRST_RETRY_MS;
  const started = Date.now();
  let readAt = started + LISTENERS_EVERY_MS;
  let previous: PortVerdict = { kind: 'wait' };
  for (;;) {
    check.signal?.throwIfAborted();
    if (!isAlive()) {
      const hint = check.exitHint?.();
      throw new Error(
        `the process exited before ${target()} became healthy (last probe: ${lastError})${hint ? `: ${hint}` : ''}`,
      );
    }
    const probeMs = Math.max(1, Math.min(PROBE_TIMEOUT_MS, deadline - Date.now()));
    try {
      await (check.path === undefined
        ? tcpProbe(check.host, port, probeMs)
        : httpProbe(check.host, port, check.path, probeMs));
      return { port };
    } catch (err) {
      lastError = (err as Error).message || String(err);
    }
    if (check.listeners && port === check.port && Date.now() >= readAt) {
      const listeners = check.listeners();
      const verdict: PortVerdict = listeners ? judgeListeners(listeners, check.port) : previous;
      const again = verdict.kind !== 'wait' && JSON.stringify(previous) === JSON.stringify(verdict);
      if (verdict.kind === 'loopback' && (verdict.port === check.port || again))
        throw new Error(
          `${target()} cannot be reached (last probe: ${lastError}): ${loopbackHint(verdict.port, check.port)}`,
        );
      if (verdict.kind === 'other' && again) {
        port = verdict.port;
        continue; // probed at once
      }
      previous = verdict;
      readAt = Date.now() + LISTENERS_EVERY_MS;
    }
    if (Date.now() >= deadline)
      throw new Error(
        `${target()} was not healthy within ${check.timeoutMs} ms (last probe: ${lastError})${silentHint(check)}`,
      );
    await sleep(Math.min(retryMs, deadline - Date.now()));
    if (Date.now() - started >= STEADY_MS) retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
  }
}

function loopbackHint(port: number, expected: number): string {
  const where = port === expected ? '' : `, not on $PORT (${expected})`;
  return `the app listens on localhost:${port} only${where}; listen on 0.0.0.0 (all interfaces) so the router can reach it, as on Render`;
}

/** At the timeout, an app that opened no port at all is told which one to open. */
function silentHint(check: HealthCheck): string {
  const listeners = check.listeners?.();
  if (!listeners || listeners.length > 0) return '';
  return `: the app opened no TCP port; a web service listens on $PORT (${check.port}) on 0.0.0.0`;
}
