import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import type { RouteState } from '../route-table.js';
import { spawnDetached, type Command } from '../../lib/exec.js';
import type { Logger } from '../../lib/logger.js';
import { tailAccessLog } from '../access-log.js';
import { createUpdateLoop } from '../update-loop.js';
import type { RequestRecord } from '../types.js';
import type { CertificateStore } from '../tls.js';
import {
  daemonFiles,
  overSocket,
  runningDaemon,
  type DaemonFiles,
  type DaemonSettings,
  type DaemonStatus,
  type DaemonUpdate,
} from './files.js';

export interface RouterProcessOptions {
  dataDir: string;
  settings: DaemonSettings;
  table: { exportState(): RouteState };
  certificates?: CertificateStore;
  acmeAnswer?(token: string): Promise<string | undefined>;
  onRequest(record: RequestRecord): void;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
}

/**
 * The API's side of the router process (files.ts): adopts the running one when it was started with the same settings
 * (else stops it and starts another), sends it the route table and certificates after every change, restarts it if it
 * dies, and tails its access log. Until `start()` an adopted router keeps serving its last table, so apps stay
 * reachable while the API restarts.
 */
export async function startRouterProcess(opts: RouterProcessOptions) {
  const files = daemonFiles(opts.dataDir);
  mkdirSync(files.dir, { recursive: true, mode: 0o700 });
  const acme = opts.acmeAnswer ? await serveAcme(files, opts.acmeAnswer) : undefined;
  let current = await adoptOrStart(files, opts.settings, opts.log);
  const updates = createUpdateLoop(send, (err) => opts.log.error({ err: err.message }, 'router: update failed'));
  const changed = () => updates.changed();

  const tail = tailAccessLog({
    file: files.accessLog,
    offsetFile: files.accessOffset,
    onRecord: opts.onRequest,
    reopen: () => signal('SIGUSR1'),
    intervalMs: 100,
  });
  opts.certificates?.onChange(() => changed());
  // A router process that died (killed, crashed) is started again and sent the current table.
  const watchdog = setInterval(() => {
    if (updates.started && !updates.busy && !runningDaemon(files)) changed();
  }, 1000);
  watchdog.unref();

  async function send(): Promise<void> {
    if (!runningDaemon(files)) {
      opts.log.warn({}, 'router: the router process was not running; starting it');
      current = { ...(await startDaemon(files, current.settings)), adopted: false }; // on the ports it had
    }
    const update: DaemonUpdate = { routes: opts.table.exportState(), certificates: opts.certificates?.pairs() ?? [] };
    const reply = await overSocket(files.control, 'PUT', '/state', JSON.stringify(update));
    if (reply.status !== 200) throw new Error(`the router process refused the update: ${reply.text}`);
  }

  function signal(name: NodeJS.Signals): void {
    const pid = runningDaemon(files);
    try {
      if (pid) process.kill(pid, name);
    } catch {
      // gone: the watchdog starts it again
    }
  }

  return {
    get pid() {
      return current.pid;
    },
    /** The running process is the one an earlier Slipway started (false again once this one had to start another). */
    get adopted() {
      return current.adopted;
    },
    ports: current.ports,
    /** The processes serving requests (workers.ts). */
    get workers() {
      return current.settings.workers ?? 1;
    },
    changed,
    /** Resolves once the router process serves every change made before the call. */
    applied: () => updates.applied(),
    /** Begins sending the route table (call once the live instances are back in it). */
    start: () => updates.start(),
    /** Stops following; the router process keeps serving (it outlives the API, like the apps). */
    async close(): Promise<void> {
      updates.stop();
      clearInterval(watchdog);
      tail.flush();
      tail.stop();
      await new Promise<void>((resolve) => (acme ? acme.close(() => resolve()) : resolve()));
    },
  };
}

async function adoptOrStart(
  files: DaemonFiles,
  wanted: DaemonSettings,
  log: RouterProcessOptions['log'],
): Promise<DaemonStatus & { adopted: boolean }> {
  const pid = runningDaemon(files);
  const running = pid ? await statusOfRunning(files) : undefined;
  // Port 0 asks for any port: the one the running process has will do, kept by a replacement too.
  const settings = {
    ...wanted,
    port: wanted.port || (running?.settings.port ?? 0),
    ...(wanted.https
      ? { https: { ...wanted.https, port: wanted.https.port || (running?.settings.https?.port ?? 0) } }
      : {}),
  };
  if (running && isDeepStrictEqual(JSON.parse(JSON.stringify(settings)), running.settings)) {
    log.info({ routerPid: running.pid, ...running.ports }, 'router: adopted the running router process');
    return { ...running, adopted: true };
  }
  // Started with other settings, or hung (it holds the ports, so a new one could not listen): replaced.
  if (pid) {
    log.info({ routerPid: pid, answered: running !== undefined }, 'router: replacing the router process');
    await stopRouterProcess(files);
  }
  const started = await startDaemon(files, settings);
  log.info({ routerPid: started.pid, ...started.ports }, 'router: started the router process');
  return { ...started, adopted: false };
}

/** `node main.js <dir>`, or with tsx's loader when Slipway itself runs from its TypeScript sources (dev, tests). */
function daemonCommand(files: DaemonFiles): Command {
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = fileURLToPath(new URL(`./main.${fromSources ? 'ts' : 'js'}`, import.meta.url));
  return { file: process.execPath, args: [...(fromSources ? ['--import', 'tsx'] : []), entry, files.dir] };
}

async function startDaemon(files: DaemonFiles, settings: DaemonSettings): Promise<DaemonStatus> {
  writeFileSync(files.settings, JSON.stringify(settings), { mode: 0o600 });
  rmSync(files.pid, { force: true });
  let exited: string | undefined;
  await spawnDetached(daemonCommand(files), { stdoutPath: files.output, stderrPath: files.output }, (code, sig) => {
    exited = `exited (${sig ?? code})`;
  });
  for (let waited = 0; waited < 30_000 && !exited; waited += 25) {
    if (runningDaemon(files)) {
      const answer = await status(files).catch(() => undefined);
      if (answer) return answer;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the router process did not start: ${exited ?? 'no answer within 30 s'} (see ${files.output})`);
}

async function status(files: DaemonFiles, timeoutMs = 2000): Promise<DaemonStatus> {
  const reply = await overSocket(files.control, 'GET', '/status', undefined, timeoutMs);
  if (reply.status !== 200) throw new Error(`router process status: ${reply.status}`);
  return JSON.parse(reply.text) as DaemonStatus;
}

/**
 * The running router's status, asked with more and more patience (2, 4, then 8 s): on a loaded machine a busy router
 * answers late, and one taken for hung is replaced, which refuses connections while the new one starts. Undefined
 * when it never answered, or exited meanwhile.
 */
async function statusOfRunning(files: DaemonFiles): Promise<DaemonStatus | undefined> {
  for (const timeoutMs of [2000, 4000, 8000]) {
    if (!runningDaemon(files)) return undefined;
    const answer = await status(files, timeoutMs).catch(() => undefined);
    if (answer) return answer;
  }
  return undefined;
}

/** Answers the router process's http-01 questions from the API's store, on a socket only Slipway's user reaches. */
async function serveAcme(files: DaemonFiles, answer: (token: string) => Promise<string | undefined>) {
  const server = http.createServer((req, res) => {
    answer((req.url ?? '').slice(1)).then(
      (text) => {
        res.writeHead(text === undefined ? 404 : 200, { 'content-type': 'text/plain' });
        res.end(text ?? '');
      },
      () => {
        res.writeHead(503);
        res.end();
      },
    );
  });
  rmSync(files.acme, { force: true });
  await new Promise<void>((resolve) => server.listen(files.acme, resolve));
  return server;
}

async function stopRouterProcess(files: DaemonFiles): Promise<void> {
  const pid = runningDaemon(files);
  if (!pid) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const gone = async (withinMs: number) => {
    for (let waited = 0; waited < withinMs && runningDaemon(files); waited += 25)
      await new Promise((r) => setTimeout(r, 25));
  };
  await gone(10_000);
  if (!runningDaemon(files)) return;
  process.kill(pid, 'SIGKILL');
  await gone(5_000);
}
