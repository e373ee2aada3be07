import { createSerial } from '../../lib/keyed-locks.js';
import { MAX_INSERT, type LogRepo, type LogRow, type NewLogEntry } from '../../store/repos/logs.js';
import type { Logger } from '../../lib/logger.js';

/** Entries held while the store does not answer; producers that can re-read (files) wait, others drop. */
const MAX_PENDING = 50_000;
/**
 * PGlite runs a statement on this thread, holding it (and the store) meanwhile: 25-85 µs a row
 * here, plus 5-10 ms a statement. A write takes what is pending, up to the rows that fit in this
 * long. At 10 ms the statement's own cost capped a backlog's drain near 3,600 rows/s on a slow
 * machine (less than 2 services' default budgets) and the live tail fell seconds behind; longer
 * writes delay the API's queries more.
 */
const MAX_WRITE_MS = 25;
const MIN_ROWS = 20;

export interface LogSinkDeps {
  repo: Pick<LogRepo, 'insertBatch'>;
  /** Pause between writes: lines arriving meanwhile share one INSERT. */
  flushMs: number;
  /** Several processes on one Postgres: batches take the write lock and NOTIFY (LogRepo.insertBatch). */
  shared: boolean;
  /** PGlite: statements run on this thread, so writes are kept short and paced (on Postgres they wait on the network). */
  inProcess: boolean;
  /** Called with the rows of each committed batch, in id order. */
  onCommitted(rows: LogRow[]): void;
  log: Logger;
}

/**
 * Batches log entries (and the file offsets they move) into one INSERT per `flushMs`, so an
 * app printing thousands of lines a second costs a few transactions a second. On PGlite the
 * store (and the thread) is the API's too, one statement at a time: a write takes at most about
 * MAX_WRITE_MS (lines arriving steadily make much shorter ones), and after a write of W ms the
 * next waits at least W, so log writes hold it half the time at most and the API's queries go in
 * between.
 */
export function createLogSink(deps: LogSinkDeps) {
  let entries: NewLogEntry[] = [];
  const offsets = new Map<string, number>();
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  let closed = false;
  const pending = () => entries.length > 0 || offsets.size > 0;
  const serial = createSerial();
  let maxRows = deps.inProcess ? 200 : MAX_INSERT;

  /** One statement: the oldest `maxRows` entries (throws when the store fails); returns how long the statement took (ms). */
  async function writeBatch(): Promise<number> {
    const batch = entries.slice(0, maxRows);
    // Offsets go with the last batch of what was pending, so they never move past unwritten lines.
    const moved = entries.length <= maxRows ? [...offsets].map(([stream, offset]) => ({ stream, offset })) : [];
    const started = performance.now();
    const written = await deps.repo.insertBatch(batch, moved, deps.shared);
    const took = performance.now() - started;
    entries = entries.slice(batch.length);
    for (const { stream, offset } of moved) if (offsets.get(stream) === offset) offsets.delete(stream);
    if (written.length) deps.onCommitted(written);
    // A full batch tells what a row costs now (the machine's load changes it): the next may take up to MAX_WRITE_MS.
    if (deps.inProcess && batch.length >= maxRows / 2 && took > 0) {
      maxRows = Math.round(
        Math.min(MAX_INSERT, Math.max(MIN_ROWS, (maxRows + (batch.length * MAX_WRITE_MS) / took) / 2)),
      );
    }
    return took;
  }

  /** Runs one write; returns how long to wait before the next, or -1 when the store failed. */
  async function writeOne(): Promise<number> {
    const statement = writeBatch();
    writing = statement.then(
      () => undefined,
      () => undefined,
    ); // what a flush waits for (the error is handled below)
    try {
      const took = await statement;
      return deps.inProcess ? Math.max(deps.flushMs, took) : deps.flushMs;
    } catch (err) {
      deps.log.warn({ err, pending: entries.length, dropped }, 'log store write failed; retrying');
      return -1;
    } finally {
      writing = undefined;
    }
  }

  function schedule(ms = deps.flushMs) {
    if (timer || writing || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (writing) return; // a flush is writing everything
      void writeOne().then((next) => {
        if (pending()) schedule(next < 0 ? 1000 : next);
      });
    }, ms);
  }

  return {
    /** Queues entries (in order) and, for a file, the offset they bring it to; false when they were dropped. */
    push(batch: NewLogEntry[], offset?: { stream: string; offset: number }): boolean {
      if (entries.length + batch.length > MAX_PENDING && !offset) {
        dropped += batch.length; // build/request lines while the store is down: bounded memory wins
        return false;
      }
      entries.push(...batch);
      if (offset) offsets.set(offset.stream, offset.offset);
      schedule();
      return true;
    },
    /** True while the store lags: file tailers stop reading (the lines wait safely on disk). */
    get backlogged() {
      return entries.length >= MAX_PENDING;
    },
    /** Writes what is pending now, batch after batch (on shutdown, and when a cron run's output is complete). */
    flush: () =>
      serial(async () => {
        if (timer) clearTimeout(timer);
        timer = undefined;
        while (writing) await writing;
        while (pending()) {
          if ((await writeOne()) < 0) return schedule(1000); // the store failed: retried later
        }
      }),
    async close() {
      await this.flush().catch(() => undefined);
      closed = true;
    },
  };
}
export type LogSink = ReturnType<typeof createLogSink>;
