import { MAX_INSERT as MAX_BATCH, type LogRepo, type LogRow, type NewLogEntry } from '../../store/repos/logs.js';

/** Entries held while the store does not answer; producers that can re-read (files) wait, others drop. */
const MAX_PENDING = 50_000;

export interface LogSinkDeps {
  repo: Pick<LogRepo, 'insertBatch'>;
  /** Pause between writes: lines arriving meanwhile share one INSERT. */
  flushMs: number;
  /** Several processes on one Postgres: batches take the write lock and NOTIFY (LogRepo.insertBatch). */
  shared: boolean;
  /** Called with the rows of each committed batch, in id order. */
  onCommitted(rows: LogRow[]): void;
  log: { warn(o: object, m?: string): void };
}

/**
 * Batches log entries (and the file offsets they move) into one INSERT per `flushMs`, so an
 * app printing thousands of lines a second costs a few transactions a second.
 */
export function createLogSink(deps: LogSinkDeps) {
  let entries: NewLogEntry[] = [];
  let offsets = new Map<string, number>();
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  let closed = false;

  async function write(): Promise<void> {
    timer = undefined;
    while (entries.length || offsets.size) {
      const batch = entries.slice(0, MAX_BATCH);
      // Offsets go with the last batch of what was pending, so they never move past unwritten lines.
      const moved = entries.length <= MAX_BATCH ? [...offsets].map(([stream, offset]) => ({ stream, offset })) : [];
      try {
        const written = await deps.repo.insertBatch(batch, moved, deps.shared);
        entries = entries.slice(batch.length);
        for (const { stream, offset } of moved) if (offsets.get(stream) === offset) offsets.delete(stream);
        if (written.length) deps.onCommitted(written);
      } catch (err) {
        deps.log.warn({ err, pending: entries.length, dropped }, 'log store write failed; retrying');
        if (!closed) schedule(1000);
        return;
      }
    }
  }

  function schedule(ms = deps.flushMs) {
    if (timer || writing || closed) return;
    timer = setTimeout(() => {
      writing = write().finally(() => {
        writing = undefined;
        if (entries.length || offsets.size) schedule();
      });
    }, ms);
  }

  return {
    /** Queues entries (in order) and, for a file, the offset they bring it to. */
    push(batch: NewLogEntry[], offset?: { stream: string; offset: number }) {
      if (entries.length + batch.length > MAX_PENDING && !offset) {
        dropped += batch.length; // build/request lines while the store is down: bounded memory wins
        return;
      }
      entries.push(...batch);
      if (offset) offsets.set(offset.stream, offset.offset);
      schedule();
    },
    /** True while the store lags: file tailers stop reading (the lines wait safely on disk). */
    get backlogged() {
      return entries.length >= MAX_PENDING;
    },
    /** Writes what is pending (used on shutdown and by tests). */
    async flush() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      await writing;
      writing = write();
      await writing;
      writing = undefined;
    },
    async close() {
      await this.flush().catch(() => undefined);
      closed = true;
    },
  };
}
export type LogSink = ReturnType<typeof createLogSink>;
