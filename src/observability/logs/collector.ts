import { watch, type FSWatcher } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { createSerial } from '../../lib/keyed-locks.js';
import type { LogRepo, NewLogEntry } from '../../store/repos/logs.js';
import { createLineSplitter, levelOf, type LineSplitter } from './lines.js';
import type { LogSink } from './sink.js';

/** An instance whose output files are tailed. */
export interface TailedInstance {
  instanceId: string;
  serviceId: string;
  workspaceId: string;
  deployId: string;
  /** Still starting or running (a stopped one is read to its end, then left). */
  active: boolean;
}

export interface CollectorDeps {
  repo: Pick<LogRepo, 'offsets'>;
  sink: LogSink;
  /** Instances running now, and those stopped recently (their last lines may be unread). */
  instances(): Promise<TailedInstance[]>;
  instanceDir(serviceId: string, instanceId: string): string;
  pollMs: number;
  log: { warn(o: object, m?: string): void };
}

const READ_CHUNK = 1024 * 1024;
/** A line without its newline is stored after the file stayed this long without growing (a prompt, a progress dot). */
const PARTIAL_LINE_MS = 1000;
/** How often the list of instances is re-read (besides when told of a new one: refreshSoon). */
const REFRESH_MS = 1000;

interface Stream {
  key: string;
  file: string;
  /** The instance dir (what inotify reports a write in). */
  dir: string;
  instance: TailedInstance;
  fallbackLevel: 'info' | 'error';
  splitter: LineSplitter;
  /** When the file last grew (ms). */
  grewAt: number;
}

/**
 * Tails every instance's stdout.log and stderr.log (the local runtime appends to them; the
 * apps outlive Slipway). Where each file was read up to is stored with the lines themselves
 * (log_offsets, same transaction), so after a restart collection resumes exactly there.
 */
export function createLogCollector(deps: CollectorDeps) {
  const streams = new Map<string, Stream>();
  /** Streams of stopped instances read to the end: not picked up again by this process. */
  const finished = new Set<string>();
  let lastRefresh = 0;
  let stopped = false;
  let loop: Promise<void> | undefined;
  // inotify on each instance dir wakes the loop as soon as an app writes (the poll is the
  // fallback for filesystems without it): a line waits microseconds, not up to `pollMs`.
  // A woken tick reads only the dirs written since the last one; every `pollMs` (however often
  // it is woken) a tick reads every stream: partial lines, stopped instances, missed events.
  const watchers = new Map<string, FSWatcher>();
  const written = new Set<string>();
  let fullPassDue = true;
  let lastFullPass = 0;
  let wake: (() => void) | undefined;
  let woken = false;
  /** `dir` was written; without one, every stream is to be read (a new instance). */
  const onWrite = (dir?: string) => {
    if (dir) written.add(dir);
    else fullPassDue = true;
    woken = true;
    wake?.();
  };
  function watchDir(dir: string) {
    if (watchers.has(dir)) return;
    try {
      watchers.set(dir, watch(dir, () => onWrite(dir)).on('error', () => unwatch(dir)));
    } catch {
      // not there yet (or no inotify): the poll covers it
    }
  }
  function unwatch(dir: string) {
    watchers.get(dir)?.close();
    watchers.delete(dir);
  }
  async function pause() {
    if (woken) return void (woken = false);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, deps.pollMs);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wake = undefined;
    woken = false;
  }

  // The loop's ticks and collectRest() take turns: one stream is never read twice at once.
  const serial = createSerial();

  async function refresh() {
    const list = await deps.instances();
    await adopt(list);
    const present = new Set(list.map((i) => i.instanceId));
    for (const [key, s] of streams) if (!present.has(s.instance.instanceId)) streams.delete(key);
    const dirs = new Set([...streams.values()].map((s) => s.dir));
    for (const dir of dirs) watchDir(dir);
    for (const dir of watchers.keys()) if (!dirs.has(dir)) unwatch(dir);
  }

  /** Starts tailing the instances' streams not tailed yet, from their stored offsets. */
  async function adopt(list: TailedInstance[]) {
    const fresh: Stream[] = [];
    for (const instance of list) {
      for (const [name, fallbackLevel] of [['stdout', 'info'], ['stderr', 'error']] as const) {
        const key = `${instance.instanceId}:${name}`;
        const known = streams.get(key);
        if (known) known.instance = instance;
        else if (!finished.has(key)) {
          const dir = deps.instanceDir(instance.serviceId, instance.instanceId);
          fresh.push({ key, file: path.join(dir, `${name}.log`), dir, instance, fallbackLevel, splitter: createLineSplitter(), grewAt: Date.now() });
        }
      }
    }
    const offsets = await deps.repo.offsets(fresh.map((s) => s.key));
    for (const s of fresh) {
      s.splitter.consumed = offsets.get(s.key) ?? 0;
      streams.set(s.key, s);
    }
  }

  /** Reads what was appended since the last read; returns whether there may be more. */
  async function readStream(s: Stream): Promise<boolean> {
    let size: number;
    try {
      size = (await stat(s.file)).size;
    } catch {
      if (!s.instance.active) streams.delete(s.key); // removed with its service or cron run
      return false;
    }
    const position = s.splitter.position;
    if (size < s.splitter.consumed) {
      s.splitter = createLineSplitter(); // the file was truncated by hand: start over
      return true;
    }
    if (size <= position) {
      if (!s.instance.active) finish(s);
      else if (position > s.splitter.consumed && Date.now() - s.grewAt >= PARTIAL_LINE_MS) pushLines(s, s.splitter.flush());
      return false;
    }
    s.grewAt = Date.now();
    const length = Math.min(size - position, READ_CHUNK);
    const buffer = Buffer.allocUnsafe(length);
    const handle = await open(s.file, 'r');
    let read: number;
    try {
      ({ bytesRead: read } = await handle.read(buffer, 0, length, position));
    } finally {
      await handle.close();
    }
    const before = s.splitter.consumed;
    const lines = s.splitter.push(buffer.subarray(0, read));
    if (s.splitter.consumed !== before || lines.length) pushLines(s, lines);
    return position + read < size;
  }

  /** Queues lines with the offset they bring the file to (stored in the same transaction). */
  function pushLines(s: Stream, lines: string[]) {
    if (lines.length) deps.sink.push(lines.map((m) => entry(s, m)), { stream: s.key, offset: s.splitter.consumed });
  }

  function finish(s: Stream) {
    pushLines(s, s.splitter.flush());
    streams.delete(s.key);
    finished.add(s.key);
  }

  function entry(s: Stream, message: string): NewLogEntry {
    const { instance } = s;
    return {
      workspaceId: instance.workspaceId, resourceId: instance.serviceId, instanceId: instance.instanceId, deployId: instance.deployId,
      type: 'app', level: levelOf(message, s.fallbackLevel), message, timeMs: Date.now(),
    };
  }

  async function tick() {
    if (Date.now() - lastRefresh >= REFRESH_MS) {
      lastRefresh = Date.now();
      await refresh();
    }
    const all = fullPassDue || Date.now() - lastFullPass >= deps.pollMs;
    if (all) {
      fullPassDue = false;
      lastFullPass = Date.now();
    }
    const dirs = new Set(written);
    written.clear();
    for (const s of [...streams.values()]) {
      if (deps.sink.backlogged || !(all || dirs.has(s.dir))) continue;
      // A file far behind is read a chunk per tick, so other instances are not starved.
      if (await readStream(s)) onWrite(s.dir);
    }
  }

  return {
    start() {
      loop = (async () => {
        while (!stopped) {
          try {
            await serial(tick);
          } catch (err) {
            deps.log.warn({ err }, 'log collector: tick failed');
          }
          await pause();
        }
      })();
    },
    /** Re-reads the list of instances on the next tick, now. */
    refreshSoon() {
      lastRefresh = 0;
      onWrite();
    },
    /** Reads a stopped instance's files to their end now (a cron run whose dir is about to be removed). */
    collectRest(instance: Omit<TailedInstance, 'active'>): Promise<void> {
      return serial(async () => {
        const ended = { ...instance, active: false };
        await adopt([ended]);
        for (const s of [...streams.values()].filter((x) => x.instance.instanceId === instance.instanceId)) {
          s.instance = ended;
          while (streams.has(s.key)) await readStream(s); // reads, then finishes (or drops a missing file)
        }
      });
    },
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      for (const dir of [...watchers.keys()]) unwatch(dir);
    },
  };
}
export type LogCollector = ReturnType<typeof createLogCollector>;
