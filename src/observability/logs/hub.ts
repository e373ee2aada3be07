import type { LogRepo, LogRow } from '../../store/repos/logs.js';

const READ_PAGE = 1000;

export interface LogHubDeps {
  repo: Pick<LogRepo, 'after' | 'maxId'>;
  /** How often the store is checked even without a notification (a missed NOTIFY, a dropped LISTEN connection). */
  pollMs: number;
  log: { warn(o: object, m?: string): void };
}

export interface HubSubscriber {
  onRow(row: LogRow): void;
}

/**
 * Fan-out of new log entries to this process's subscribers. Whoever writes entries pokes
 * the hub (the local sink directly; other processes through Postgres NOTIFY); the hub then
 * reads the new rows once, in id order, for all subscribers. Writers hold a lock while
 * inserting (see LogRepo.insertBatch), so ids become visible in order and reading "after
 * the last id seen" misses nothing.
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
        for (const row of rows) {
          lastId = row.id;
          for (const s of subscribers) s.onRow(row);
        }
        if (rows.length < READ_PAGE) break;
      }
    } while (dirty);
  }

  function poke() {
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
      timer = setInterval(poke, deps.pollMs);
    },
    /** New entries may exist (up to `maxId` when known). */
    poke,
    /** The id of the newest entry handed to subscribers. */
    get lastId() {
      return lastId;
    },
    get subscriberCount() {
      return subscribers.size;
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
