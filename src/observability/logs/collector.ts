import { open, stat } from 'node:fs/promises';
import path from 'node:path';
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
/** How often the list of instances is re-read (a new instance's first lines wait at most this long). */
const REFRESH_MS = 250;

interface Stream {
  key: string;
  file: string;
  instance: TailedInstance;
  fallbackLevel: 'info' | 'error';
  splitter: LineSplitter;
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

  async function refresh() {
    const list = await deps.instances();
    const fresh: Stream[] = [];
    for (const instance of list) {
      for (const [name, fallbackLevel] of [['stdout', 'info'], ['stderr', 'error']] as const) {
        const key = `${instance.instanceId}:${name}`;
        const known = streams.get(key);
        if (known) known.instance = instance;
        else if (!finished.has(key)) {
          const file = path.join(deps.instanceDir(instance.serviceId, instance.instanceId), `${name}.log`);
          fresh.push({ key, file, instance, fallbackLevel, splitter: createLineSplitter() });
        }
      }
    }
    const offsets = await deps.repo.offsets(fresh.map((s) => s.key));
    for (const s of fresh) {
      s.splitter.consumed = offsets.get(s.key) ?? 0;
      streams.set(s.key, s);
    }
    const present = new Set(list.map((i) => i.instanceId));
    for (const [key, s] of streams) if (!present.has(s.instance.instanceId)) streams.delete(key);
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
      return false;
    }
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
    if (s.splitter.consumed !== before || lines.length) deps.sink.push(lines.map((m) => entry(s, m)), { stream: s.key, offset: s.splitter.consumed });
    return position + read < size;
  }

  function finish(s: Stream) {
    const rest = s.splitter.flush();
    if (rest.length) deps.sink.push(rest.map((m) => entry(s, m)), { stream: s.key, offset: s.splitter.consumed });
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
    for (const s of [...streams.values()]) {
      // A file far behind is read a chunk per tick, so other instances are not starved.
      if (!deps.sink.backlogged) await readStream(s);
    }
  }

  return {
    start() {
      loop = (async () => {
        while (!stopped) {
          try {
            await tick();
          } catch (err) {
            deps.log.warn({ err }, 'log collector: tick failed');
          }
          await new Promise((r) => setTimeout(r, deps.pollMs));
        }
      })();
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
export type LogCollector = ReturnType<typeof createLogCollector>;
