import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createFairSlots } from './fair-slots.js';

/** Why a task was not done: over its time or memory limit, or too many of its key's tasks waiting already. */
export class WorkerLimitError extends Error {
  constructor(
    readonly limit: 'time' | 'memory' | 'busy',
    message: string,
  ) {
    super(message);
  }
}

/** What a worker entry posts back for each message: its result, or the message of what it threw. */
export type WorkerReply<T> = { result: T } | { error: string };

export interface WorkerPoolOptions {
  /** The module each worker runs: it answers every message with one WorkerReply. */
  entry: URL;
  /** Workers busy at once, and per key (a workspace). */
  slots: number;
  perKey: number;
  /** A key's tasks waiting for a slot; past it, run() fails with `busy` at once. */
  maxWaiting: number;
  /** A task running longer has its worker terminated. */
  timeoutMs: number;
  /** The worker's heap limit (V8's old generation): past it the worker dies, not the process. */
  memoryMb: number;
  /** An idle worker is kept this long for the next task (starting one costs tens of ms). */
  idleMs?: number;
}

/**
 * Work that could hold the event loop or the process's memory (parsing what a tenant uploads), run in worker threads
 * with a time and a heap limit, a few at a time, shared fairly between keys (lib/fair-slots.ts). A worker that ran
 * out of time or memory is thrown away; one that answered is kept for the next task.
 */
export function createWorkerPool(opts: WorkerPoolOptions) {
  const slots = createFairSlots({ slots: opts.slots, perKey: opts.perKey });
  const idle: Array<{ worker: Worker; timer: NodeJS.Timeout }> = [];
  const busy = new Set<Worker>();

  function take(): Worker {
    const kept = idle.pop();
    if (kept) {
      clearTimeout(kept.timer);
      kept.worker.ref();
      return kept.worker;
    }
    const worker = spawn(opts.entry, { maxOldGenerationSizeMb: opts.memoryMb });
    worker.on('exit', () => {
      const at = idle.findIndex((w) => w.worker === worker);
      if (at >= 0) clearTimeout(idle.splice(at, 1)[0]!.timer);
    });
    return worker;
  }

  function keep(worker: Worker) {
    worker.unref(); // an idle worker never keeps the process alive
    const timer = setTimeout(() => void worker.terminate(), opts.idleMs ?? 30_000); // its exit takes it off the list
    timer.unref();
    idle.push({ worker, timer });
  }

  function runOn<T>(worker: Worker, input: unknown): Promise<T> {
    busy.add(worker);
    return new Promise<T>((resolve, reject) => {
      let healthy = false;
      const done = (settle: () => void) => {
        clearInterval(timer);
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        busy.delete(worker);
        if (healthy) keep(worker);
        else void worker.terminate();
        settle();
      };
      // The limit is the worker's own CPU time where Linux tells it (a worker that other load starves is not cut
      // short), with the wall clock as a backstop; the wall clock alone elsewhere.
      const tid = threadIds.get(worker);
      const cpuAtStart = tid === undefined ? undefined : threadCpuMs(tid);
      const started = Date.now();
      const overLimit = () =>
        cpuAtStart === undefined
          ? Date.now() - started >= opts.timeoutMs
          : (threadCpuMs(tid!) ?? Infinity) - cpuAtStart >= opts.timeoutMs ||
            Date.now() - started >= opts.timeoutMs * WALL_BACKSTOP;
      const timer = setInterval(() => {
        if (overLimit())
          done(() =>
            reject(new WorkerLimitError('time', `did not finish within ${Math.round(opts.timeoutMs / 100) / 10} s`)),
          );
      }, CHECK_MS);
      const onMessage = (reply: WorkerReply<T>) => {
        healthy = true;
        done(() => ('error' in reply ? reject(new Error(reply.error)) : resolve(reply.result)));
      };
      const onError = (err: Error & { code?: string }) =>
        done(() =>
          reject(
            err.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? new WorkerLimitError('memory', `needed more than ${opts.memoryMb} MB`)
              : err,
          ),
        );
      const onExit = (code: number) => done(() => reject(new Error(`the worker exited with code ${code}`)));
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
      worker.postMessage(input);
    });
  }

  return {
    /** Runs one task for `key` once a slot is free; rejects with WorkerLimitError past a limit. */
    async run<T>(key: string, input: unknown): Promise<T> {
      if (slots.waiting(key) >= opts.maxWaiting)
        throw new WorkerLimitError('busy', `${slots.waiting(key) + slots.running(key)} tasks already under way`);
      const release = await slots.acquire(key);
      try {
        const worker = take();
        await booting.get(worker)?.catch((err: Error) => {
          void worker.terminate();
          throw err;
        });
        return await runOn<T>(worker, input);
      } finally {
        release();
      }
    },
    async close() {
      const all = [...idle.map((w) => w.worker), ...busy];
      for (const w of idle) clearTimeout(w.timer);
      idle.length = 0;
      await Promise.all(all.map((w) => w.terminate()));
    },
  };
}
export type WorkerPool = ReturnType<typeof createWorkerPool>;

/** A new worker's time to load its entry (not counted against its first task's limit). */
const BOOT_TIMEOUT_MS = 60_000;
/** How often a task's time is checked, and how many times its limit it may take by the wall clock. */
const CHECK_MS = 100;
const WALL_BACKSTOP = 5;
/** Linux's clock ticks per second (USER_HZ), the unit of /proc's CPU times. */
const TICKS_PER_SECOND = 100;

/** The CPU time (ms) a thread of this process has used, from /proc; undefined where there is none. */
function threadCpuMs(tid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 (state) on
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND; // utime + stime
  } catch {
    return undefined;
  }
}

/**
 * A worker on `entry`, which says `ready` once its entry is loaded. Run from the TypeScript sources (dev, tests: the
 * entry is a .ts file), the worker registers tsx's loader before importing it, as the main thread did (a worker does
 * not inherit `--import tsx`).
 */
function spawn(entry: URL, resourceLimits: { maxOldGenerationSizeMb: number }): Worker {
  const load = entry.pathname.endsWith('.ts')
    ? `import(${JSON.stringify(tsxApi())}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`
    : `import(${JSON.stringify(entry.href)})`;
  // Reniced below the API (Linux), and its thread id told with `ready`, so its own CPU time can be read.
  const renice = `let tid; try { tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()); require('node:os').setPriority(tid, ${NICE}); } catch {}`;
  const ready = `.then(() => require('node:worker_threads').parentPort.postMessage({ ready: true, tid }))`;
  const worker = new Worker(`${renice}\n${load}${ready};`, { eval: true, resourceLimits });
  worker.on('error', () => undefined); // a task's own listener reports it; an idle worker's death only ends it
  booting.set(
    worker,
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the worker did not start in time')), BOOT_TIMEOUT_MS);
      const settle = (err?: Error) => {
        clearTimeout(timer);
        worker.off('message', onReady).off('error', settle).off('exit', onExit);
        if (err) reject(err);
        else resolve();
      };
      const onReady = (message: { ready?: boolean; tid?: number }) => {
        if (!message?.ready) return;
        if (typeof message.tid === 'number' && threadCpuMs(message.tid) !== undefined)
          threadIds.set(worker, message.tid);
        settle();
      };
      const onExit = (code: number) => settle(new Error(`the worker exited with code ${code} while starting`));
      worker.on('message', onReady).on('error', settle).on('exit', onExit);
    }),
  );
  return worker;
}
/** Workers that are still loading their entry: settled once they said ready. */
const booting = new WeakMap<Worker, Promise<void>>();
/** Each worker's thread id (Linux), where its CPU time is read. */
const threadIds = new WeakMap<Worker, number>();
/** A worker thread's CPU priority (nice): below the API's, so a file being parsed slows down before the API does. */
const NICE = 10;

/** tsx's ESM API (`tsx/esm/api`, whose `register()` installs its loader), by its package's own exports. */
function tsxApi(): string {
  const pkg = createRequire(import.meta.url).resolve('tsx/package.json');
  const exports = (
    JSON.parse(readFileSync(pkg, 'utf8')) as { exports: Record<string, { import: { default: string } }> }
  ).exports;
  return pathToFileURL(path.join(path.dirname(pkg), exports['./esm/api']!.import.default)).href;
}
