import cluster, { type Worker } from 'node:cluster';
import { createRouteTable } from '../route-table.js';
import type { DaemonFiles, DaemonSettings, DaemonUpdate } from './files.js';
import type { DaemonLog } from './output.js';
import { startServing, type Serving } from './serve.js';

/**
 * The router as several worker processes (node:cluster) behind one listening socket: a Node process forwards about as
 * many requests a second as a minimal `node:http` proxy does, so the router uses the machine's cores as nginx's worker
 * processes do. The primary (main.ts) keeps the control socket and the kept state, and hands each update to every worker.
 */
type ToWorker =
  { type: 'start'; text?: string } | { type: 'load'; id: number; text: string } | { type: 'reopen' | 'stop' };
type FromWorker =
  { type: 'listening' } | { type: 'ready'; ports: Serving['ports'] } | { type: 'loaded'; id: number; error?: string };

const LOAD_TIMEOUT_MS = 30_000;
const RESPAWN_MAX_DELAY_MS = 5_000;
/** Workers that have not ended their connections by then are killed. */
const CLOSE_TIMEOUT_MS = 10_000;
/** A worker up this long was not crashing at start: the next respawn is quick again. */
const STABLE_AFTER_MS = 10_000;

export async function startWorkers(
  count: number,
  settings: DaemonSettings,
  log: DaemonLog,
  initial: string | undefined,
): Promise<Serving> {
  let latest = initial;
  let stopping = false;
  let failures = 0;
  let nextLoad = 1;
  /** Loads not yet answered by every worker that was running when they were sent. */
  const loads = new Map<number, { waiting: Set<number>; errors: string[]; settle(): void }>();
  /** Every worker alive; `listening`: those that have said they take messages (one sent before is lost). */
  const workers = new Map<number, Worker>();
  const listening = new Map<number, Worker>();
  /** Where updates are checked: kept, so a static site's rules that did not change are not compiled again. */
  const checked = createRouteTable(settings.appsDomain);

  const answered = (id: number, workerId: number, error?: string) => {
    const load = loads.get(id);
    if (!load?.waiting.delete(workerId)) return;
    if (error) load.errors.push(error);
    if (load.waiting.size === 0) load.settle();
  };

  function fork(): Promise<Serving['ports']> {
    const worker = cluster.fork();
    const startedAt = Date.now();
    workers.set(worker.id, worker);
    // Writing to a worker that just died fails (EPIPE) before its exit is seen: the exit handler cleans up.
    worker.on('error', (err) => log.warn({ err, workerPid: worker.process.pid }, 'router: a worker unreachable'));
    return new Promise((resolve, reject) => {
      worker.on('message', (message: FromWorker) => {
        if (message.type === 'listening') {
          if (stopping) return void worker.kill();
          // From here on it gets every message; what was sent before is in `latest`.
          listening.set(worker.id, worker);
          send(worker, { type: 'start', ...(latest !== undefined ? { text: latest } : {}) });
        } else if (message.type === 'ready') resolve(message.ports);
        else answered(message.id, worker.id, message.error);
      });
      worker.once('exit', (code, signal) => {
        workers.delete(worker.id);
        listening.delete(worker.id);
        for (const id of [...loads.keys()]) answered(id, worker.id);
        reject(new Error(`a router worker exited at start (${signal ?? code})`));
        if (stopping) return;
        failures = Date.now() - startedAt > STABLE_AFTER_MS ? 0 : failures + 1;
        const delay = Math.min(RESPAWN_MAX_DELAY_MS, 50 * 2 ** failures);
        log.warn({ workerPid: worker.process.pid, code, signal, respawnInMs: delay }, 'router: a worker exited');
        setTimeout(() => {
          if (stopping) return;
          fork().then(
            (ports) => log.info({ ...ports }, 'router: a new worker serves'),
            () => undefined,
          );
        }, delay).unref();
      });
    });
  }

  const ports = (await Promise.all(Array.from({ length: count }, fork)))[0]!;
  return {
    ports,
    async load(text) {
      // Checked here first: an update is taken by every worker or by none, and a respawned worker starts from it.
      checked.importState((JSON.parse(text) as DaemonUpdate).routes);
      latest = text;
      const id = nextLoad++;
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => settle(`the workers did not load it within ${LOAD_TIMEOUT_MS} ms`),
          LOAD_TIMEOUT_MS,
        );
        const settle = (timeout?: string) => {
          clearTimeout(timer);
          const errors = loads.get(id)?.errors ?? [];
          loads.delete(id);
          if (timeout) errors.push(timeout);
          if (errors.length) reject(new Error(errors.join('; ')));
          else resolve();
        };
        loads.set(id, { waiting: new Set(listening.keys()), errors: [], settle: () => settle() });
        for (const worker of listening.values()) send(worker, { type: 'load', id, text });
        if (listening.size === 0) settle(); // all starting again: they start from `latest`
      });
    },
    reopenLog: () => listening.forEach((worker) => send(worker, { type: 'reopen' })),
    async close() {
      stopping = true;
      const exited = [...workers.values()].map(
        (worker) =>
          new Promise<void>((resolve) => {
            if (worker.isDead()) return resolve();
            worker.once('exit', () => resolve());
            // One still starting is not serving yet: it is ended at once (it would not hear `stop`).
            if (listening.has(worker.id)) send(worker, { type: 'stop' });
            else worker.kill('SIGKILL');
          }),
      );
      const late = setTimeout(() => workers.forEach((worker) => worker.kill('SIGKILL')), CLOSE_TIMEOUT_MS);
      await Promise.all(exited);
      clearTimeout(late);
    },
  };
}

function send(worker: Worker, message: ToWorker): void {
  if (worker.isConnected()) worker.send(message);
}

/** A worker process: serves what the primary sends it, one message after another. */
export function serveAsWorker(settings: DaemonSettings, files: DaemonFiles, log: DaemonLog): void {
  let serving: Serving | undefined;
  let queue = Promise.resolve();
  const reply = (message: FromWorker) => process.send?.(message);
  const stop = async () => {
    await serving?.close();
    process.exit(0);
  };
  async function handle(message: ToWorker): Promise<void> {
    if (message.type === 'start') {
      serving = await startServing(settings, files, log, message.text);
      reply({ type: 'ready', ports: serving.ports });
    } else if (message.type === 'load') {
      // The primary sends `start` first; answered all the same, so the primary never waits on it.
      const error = serving
        ? await serving.load(message.text).then(
            () => undefined,
            (err: Error) => err.message,
          )
        : 'not started';
      reply({ type: 'loaded', id: message.id, ...(error ? { error } : {}) });
    } else if (message.type === 'reopen') serving?.reopenLog();
    else await stop();
  }
  process.on('message', (message: ToWorker) => {
    queue = queue
      .then(() => handle(message))
      .catch((err: unknown) => {
        log.error({ err }, 'router: a worker failed');
        process.exit(1);
      });
  });
  // When the primary dies (kill -9), node:cluster ends the worker at once: the listening socket went with the primary.
  // Signals reach the whole group from a terminal: the primary decides when the workers stop.
  process.on('SIGINT', () => undefined);
  process.on('SIGHUP', () => undefined);
  process.on('SIGTERM', () => void stop());
  reply({ type: 'listening' });
}
