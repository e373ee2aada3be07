import http from 'node:http';
import net from 'node:net';

export interface HealthCheck {
  port: number;
  /** HTTP GET this path (2xx/3xx is healthy); without it, a TCP connect is enough. */
  path?: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

// Probe often at first (most apps listen within a few hundred ms), then back off.
const FIRST_RETRY_MS = 10;
const MAX_RETRY_MS = 200;
const PROBE_TIMEOUT_MS = 2000;

function httpProbe(port: number, path: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 400) resolve();
      else reject(new Error(`GET ${path} answered ${status}`));
    });
    req.once('timeout', () => req.destroy(new Error(`GET ${path} got no answer within ${timeoutMs} ms`)));
    req.once('error', reject);
  });
}

function tcpProbe(port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('timeout', () => socket.destroy(new Error(`no TCP connection within ${timeoutMs} ms`)));
    socket.once('error', reject);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Probes 127.0.0.1:port until it answers; rejects as soon as the process is gone, on timeout or on abort. */
export async function waitHealthy(check: HealthCheck, isAlive: () => boolean): Promise<void> {
  const deadline = Date.now() + check.timeoutMs;
  const target = check.path === undefined ? `port ${check.port}` : `http://127.0.0.1:${check.port}${check.path}`;
  let lastError = 'not probed yet';
  let retryMs = FIRST_RETRY_MS;
  for (;;) {
    check.signal?.throwIfAborted();
    if (!isAlive()) throw new Error(`the process exited before ${target} became healthy (last probe: ${lastError})`);
    const probeMs = Math.max(1, Math.min(PROBE_TIMEOUT_MS, deadline - Date.now()));
    try {
      await (check.path === undefined ? tcpProbe(check.port, probeMs) : httpProbe(check.port, check.path, probeMs));
      return;
    } catch (err) {
      lastError = (err as Error).message || String(err);
    }
    if (Date.now() >= deadline) throw new Error(`${target} was not healthy within ${check.timeoutMs} ms (last probe: ${lastError})`);
    await sleep(Math.min(retryMs, deadline - Date.now()));
    retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
  }
}
