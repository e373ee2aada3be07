import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { RouteState } from '../route-table.js';
import type { KeyPair } from '../tls.js';
import type { RouterTimeouts } from '../types.js';

/**
 * The Node router as a process of its own (one per data dir, in `<dataDir>/router-node`): it outlives the API process,
 * keeps serving from the last route table it was sent, and is adopted by the next Slipway through its pid file.
 * Everything here is shared by the router process (main.ts) and the API's side of it (index.ts).
 */
export interface DaemonSettings {
  appsDomain: string;
  host: string;
  port: number; // 0 = any free port (the process reports the one it got)
  timeouts: RouterTimeouts;
  /** Behind nginx: loopback only, TLS terminated by nginx (`behindProxy`, router/types.ts). */
  behindProxy: boolean;
  https?: { port: number; redirectPort?: number; fallback: KeyPair };
  /** ACME http-01 answers are asked of the API over `acme.sock` (the store is the API's). */
  acme: boolean;
  /** Processes serving requests (workers.ts); 1: the router process serves itself. */
  workers?: number;
}

/** What the API sends on every change: the route table and the certificates served by SNI. */
export interface DaemonUpdate {
  routes: RouteState;
  certificates: Array<{ name: string; certPem: string; keyPem: string }>;
}

export interface DaemonStatus {
  pid: number;
  generation: number;
  /** As started, with the ports it really listens on. */
  settings: DaemonSettings;
  ports: { http: number; https?: number };
}

export const daemonFiles = (dataDir: string) => {
  const dir = path.join(dataDir, 'router-node');
  return {
    dir,
    settings: path.join(dir, 'settings.json'),
    /** The last update, loaded again when the process starts (a crash, a reboot) before the API sends a new one. */
    state: path.join(dir, 'state.json'),
    pid: path.join(dir, 'router.pid'),
    control: path.join(dir, 'control.sock'),
    acme: path.join(dir, 'acme.sock'),
    accessLog: path.join(dir, 'access.log'),
    accessOffset: path.join(dir, 'access.offset'),
    output: path.join(dir, 'router.log'),
  };
};
export type DaemonFiles = ReturnType<typeof daemonFiles>;

/** The router process of this data dir, if one runs: the pid file's process, still our entry point on this dir. */
export function runningDaemon(files: DaemonFiles): number | undefined {
  try {
    const pid = Number(readFileSync(files.pid, 'utf8').trim());
    if (!(pid > 0)) return undefined;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmdline.some((arg) => /router\/daemon\/main\.[jt]s$/.test(arg)) && cmdline.includes(files.dir)
      ? pid
      : undefined;
  } catch {
    return undefined;
  }
}

/** One request over a unix socket (the control socket, or the API's ACME socket); rejects on any failure. */
export function overSocket(
  socketPath: string,
  method: string,
  urlPath: string,
  body?: string,
  timeoutMs = 10_000,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path: urlPath, timeout: timeoutMs, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
