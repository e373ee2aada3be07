import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { createSerial } from '../../lib/keyed-locks.js';
import type { LogRepo, NewLogEntry } from '../../store/repos/logs.js';
import type { DropSource, LogBudget } from './budget.js';
import { createLineSplitter, levelOf, type LineSplitter } from './lines.js';
import type { LogSink } from './sink.js';
import { createWakeups } from './wakeups.js';
import type { Logger } from '../../lib/logger.js';

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
  /** Lines per second per service: what is over it is dropped (and reported by the budget). */
  budget: LogBudget;
  /** Instances running now, and those stopped recently (their last lines may be unread). */
  instances(): Promise<TailedInstance[]>;
  instanceDir(serviceId: string, instanceId: string): string;
  pollMs: number;
  log: Logger;
}

// Bounds on one pass's synchronous work, so the event loop serving the API is never held long:
// a read is at most READ_CHUNK bytes, of which at most LINES_PER_READ lines are decoded.
const READ_CHUNK = 64 * 1024;
const LINES_PER_READ = 2000;
/** A service over budget with more unread than this skips to the file's end unread (an estimate is counted). */
const SKIP_MIN_BYTES = 256 * 1024;
/** A backlog larger than this, found on adoption, was a flood: the budget applies to it as to any output. */
const BACKLOG_MAX_BYTES = 64 * 1024 * 1024;
/** Read before a skip, to land on a line start. */
const TAIL_WINDOW = 8 * 1024;
/** Line length assumed for an estimate before any line of the stream was seen. */
const DEFAULT_LINE_BYTES = 100;
/** Woken passes are at least this far apart: a chatty app costs ≤ 1000/MIN_TICK_MS passes a second. */
const MIN_TICK_MS = 10;
/** A service that dropped lines this recently is read on the poll only, not woken by its writes. */
const DROPPING_MS = 1000;
const NEWLINE = 0x0a;
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
  /** Average line length seen (bytes, newline included), for estimating what a skip dropped. */
  lineBytes?: number;
  /**
   * The file's size when this process, starting, found it: what was printed while Slipway was down is read without
   * charging the budget, which measures how fast an app prints, not how late Slipway reads. An instance found later
   * (started while this process runs) has none: what it printed before it was found is charged like the rest.
   */
  backlogEnd?: number;
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
  /** The first refresh adopts what was running before this process: only its unread output is a backlog. */
  let adoptedAtStart = false;
  let stopped = false;
  let loop: Promise<void> | undefined;
  const wakeups = createWakeups(deps.pollMs, MIN_TICK_MS);
  /** Over budget lately: its writes do not wake the loop; the poll reads it, which is soon enough. */
  const dropping = (s: Stream) => deps.budget.dropping(s.instance.serviceId, DROPPING_MS);

  // The loop's ticks and collectRest() take turns: one stream is never read twice at once.
  const serial = createSerial();

  async function refresh() {
    const list = await deps.instances();
    await adopt(list, !adoptedAtStart);
    adoptedAtStart = true;
    const present = new Set(list.map((i) => i.instanceId));
    for (const [key, s] of streams) if (!present.has(s.instance.instanceId)) streams.delete(key);
    wakeups.keepOnly(new Set([...streams.values()].map((s) => s.dir)));
    for (const s of streams.values()) if (!dropping(s)) wakeups.arm(s.dir);
  }

  /** Starts tailing the instances' streams not tailed yet, from their stored offsets. */
  async function adopt(list: TailedInstance[], backlog = false) {
    const fresh: Stream[] = [];
    for (const instance of list) {
      for (const [name, fallbackLevel] of [
        ['stdout', 'info'],
        ['stderr', 'error'],
      ] as const) {
        const key = `${instance.instanceId}:${name}`;
        const known = streams.get(key);
        if (known) known.instance = instance;
        else if (!finished.has(key)) {
          const dir = deps.instanceDir(instance.serviceId, instance.instanceId);
          fresh.push({
            key,
            file: path.join(dir, `${name}.log`),
            dir,
            instance,
            fallbackLevel,
            splitter: createLineSplitter(),
            grewAt: Date.now(),
          });
        }
      }
    }
    const offsets = await deps.repo.offsets(fresh.map((s) => s.key));
    for (const s of fresh) {
      s.splitter.consumed = offsets.get(s.key) ?? 0;
      const size = await stat(s.file).then(
        (st) => st.size,
        () => 0,
      );
      if (backlog && size > s.splitter.consumed && size - s.splitter.consumed <= BACKLOG_MAX_BYTES) s.backlogEnd = size;
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
      else if (position > s.splitter.consumed && Date.now() - s.grewAt >= PARTIAL_LINE_MS)
        pushLines(s, s.splitter.flush());
      return false;
    }
    s.grewAt = Date.now();
    const { serviceId } = s.instance;
    const catchingUp = s.backlogEnd !== undefined && position < s.backlogEnd;
    const allowed = catchingUp ? LINES_PER_READ : deps.budget.available(serviceId);
    // Far over budget: what is unread is dropped without reading it through (an app can print
    // 50 MB/s); the lines printed from now on are the next ones kept.
    if (allowed < 1 && size - position > SKIP_MIN_BYTES && (await skipToEnd(s, size))) return false;
    const before = s.splitter.consumed;
    const chunk = await readAt(s.file, position, Math.min(size - position, READ_CHUNK));
    // Within budget, at most LINES_PER_READ lines, the rest left for the next read; over it, the rest only counted.
    const taken = s.splitter.take(chunk, Math.min(allowed, LINES_PER_READ), allowed < LINES_PER_READ);
    if (!catchingUp) deps.budget.spend(serviceId, taken.lines.length);
    const seen = taken.lines.length + taken.dropped;
    if (seen) s.lineBytes = (s.lineBytes ?? taken.seenBytes / seen) * 0.8 + (taken.seenBytes / seen) * 0.2;
    if (taken.dropped) deps.budget.drop(source(s), taken.dropped, taken.droppedBytes);
    if (s.splitter.consumed !== before) pushLines(s, taken.lines);
    return s.splitter.position < size;
  }

  /** Skips to the last line start before `size`; false when none is near the end (a huge line: read through instead). */
  async function skipToEnd(s: Stream, size: number): Promise<boolean> {
    const from = Math.max(s.splitter.position, size - TAIL_WINDOW);
    const tail = await readAt(s.file, from, size - from);
    const last = tail.lastIndexOf(NEWLINE);
    if (last === -1) return false;
    const target = from + last + 1;
    const skipped = target - s.splitter.consumed;
    deps.budget.drop(source(s), Math.max(1, Math.round(skipped / (s.lineBytes ?? DEFAULT_LINE_BYTES))), skipped, true);
    s.splitter.skipTo(target);
    pushLines(s, []);
    return true;
  }

  async function readAt(file: string, position: number, length: number): Promise<Buffer> {
    const buffer = Buffer.allocUnsafe(length);
    const handle = await open(file, 'r');
    try {
      const { bytesRead } = await handle.read(buffer, 0, length, position);
      return buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }

  /** Queues lines (possibly none: dropped ones) with the offset they bring the file to (stored in the same transaction). */
  function pushLines(s: Stream, lines: string[]) {
    deps.sink.push(
      lines.map((m) => entry(s, m)),
      { stream: s.key, offset: s.splitter.consumed },
    );
  }

  function source(s: Stream): DropSource {
    const { instance } = s;
    return {
      serviceId: instance.serviceId,
      workspaceId: instance.workspaceId,
      instanceId: instance.instanceId,
      deployId: instance.deployId,
    };
  }

  function finish(s: Stream) {
    const rest = s.splitter.flush();
    if (rest.length) pushLines(s, rest);
    streams.delete(s.key);
    finished.add(s.key);
  }

  function entry(s: Stream, message: string): NewLogEntry {
    const { instance } = s;
    return {
      workspaceId: instance.workspaceId,
      resourceId: instance.serviceId,
      instanceId: instance.instanceId,
      deployId: instance.deployId,
      type: 'app',
      level: levelOf(message, s.fallbackLevel),
      message,
      timeMs: Date.now(),
    };
  }

  async function tick() {
    const { all, dirs } = wakeups.begin();
    if (Date.now() - lastRefresh >= REFRESH_MS) {
      lastRefresh = Date.now();
      await refresh();
    }
    for (const s of [...streams.values()]) {
      if (deps.sink.backlogged || !(all || dirs.has(s.dir))) continue;
      if (!dropping(s)) wakeups.arm(s.dir); // re-armed before reading: a write from here on wakes the loop
      // A file far behind is read a chunk per tick, so other instances are not starved.
      const more = await readStream(s);
      if (dropping(s)) wakeups.disarm(s.dir);
      else if (more) wakeups.wrote(s.dir);
      await yieldToLoop(); // what the API has waiting goes first
    }
    deps.budget.reportDue();
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
          await wakeups.pause();
        }
      })();
    },
    /** Re-reads the list of instances on the next tick, now. */
    refreshSoon() {
      lastRefresh = 0;
      wakeups.wrote();
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
      wakeups.stop();
      await loop;
    },
  };
}
export type LogCollector = ReturnType<typeof createLogCollector>;
