import type { LogRepo, LogRow } from '../../store/repos/logs.js';
import type { Logger } from '../../lib/logger.js';
import { yieldToLoop } from './scan.js';

/** Rows per read: a short statement (PGlite runs in this process), with the event loop given back between reads. */
const READ_PAGE = 200;

export interface LogHubDeps {
  repo: Pick<LogRepo, 'after' | 'maxId'>;
  /** How often the store is checked even without a notification (a missed NOTIFY, a dropped LISTEN connection). */
  pollMs: number;
  log: Pick<Logger, 'warn'>;
}

export interface HubSubscriber {
  /**
   * New entries in id order (one committed batch or one page read back): every entry with an id in (afterId, last
   * row's id], so a subscriber that has seen everything up to afterId may take these as the whole of that range.
   */
  onRows(rows: LogRow[], afterId: number): void;
}

/**
 * Fan-out of new log entries to this process's subscribers, in id order. The local sink
 * hands over the rows it just committed: when they follow the last id delivered, they go
 * straight out (the hot path: no read-back). Otherwise (another process wrote in between,
 * announced by Postgres NOTIFY, or a read is under way) the hub reads the new rows once for
 * all subscribers. On a shared Postgres, writers hold a lock while inserting (see
 * LogRepo.insertBatch); PGlite has one connection. Either way ids become visible in order, so
 * reading "after the last id seen" misses nothing.
 */
export function createLogHub(deps: LogHubDeps) {
  const subscribers = new Set<HubSubscriber>();
  let lastId = 0;
  let reading: Promise<void> | undefined;
  let dirty = false;
  let timer: NodeJS.Timeout | undefined;

  async function readNew() {
    do {
      dirty = false;
      if (subscribers.size === 0) {
        // Nobody listens: just keep the position. Unless someone subscribed meanwhile: then
        // jumping ahead would skip rows they were promised, so read them instead.
        const max = await deps.repo.maxId();
        if (subscribers.size === 0) lastId = Math.max(lastId, max);
        else dirty = true;
        continue;
      }
      for (;;) {
        const rows = await deps.repo.after(lastId, READ_PAGE);
        deliver(rows);
        if (rows.length < READ_PAGE) break;
        // PGlite answers in microtasks: without this, a backlog is read in one stretch, with no I/O between reads.
        await yieldToLoop();
      }
    } while (dirty);
  }

  function deliver(rows: LogRow[]) {
    if (!rows.length) return;
    const afterId = lastId;
    lastId = rows.at(-1)!.id;
    for (const s of subscribers) s.onRows(rows, afterId);
  }

  /** `upTo`: the newest id a writer announced; nothing to read when it was delivered already (our own batch's NOTIFY). */
  function poke(upTo?: number) {
    if (upTo !== undefined && upTo <= lastId) return;
    if (reading) return void (dirty = true);
    reading = readNew()
      .catch((err) => deps.log.warn({ err }, 'log hub: read failed'))
      .finally(() => {
        reading = undefined;
      });
  }

  return {
    async start() {
      lastId = await deps.repo.maxId();
      timer = setInterval(() => poke(), deps.pollMs);
    },
    /** New entries may exist (written by another process, or while not listening), up to `upTo` when known. */
    poke,
    /** Rows this process just committed, in id order. */
    written(rows: LogRow[]) {
      if (reading || rows[0]!.id !== lastId + 1) return poke(); // a gap: someone else's rows come first
      deliver(rows);
    },
    /** The id of the newest entry handed to subscribers. */
    get lastId() {
      return lastId;
    },
    subscribe(s: HubSubscriber): () => void {
      subscribers.add(s);
      return () => subscribers.delete(s);
    },
    async close() {
      if (timer) clearInterval(timer);
      await reading;
    },
  };
}
export type LogHub = ReturnType<typeof createLogHub>;
