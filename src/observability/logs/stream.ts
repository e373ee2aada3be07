import type { WebSocket } from 'ws';
import type { LogRepo, LogRow } from '../../store/repos/logs.js';
import { logSubscribers } from '../prometheus.js';
import type { ParsedLogFilter } from './filters.js';
import { writeEntries } from './frames.js';
import { matchInSlices, slicer } from './scan.js';
import type { LogHub } from './hub.js';

/** Close code for a subscriber that does not read fast enough: reconnect with `afterId` = the last id received. */
export const SLOW_CONSUMER_CLOSE = 4008;
const REPLAY_PAGE = 200;
/** The replay's window has no end: it reads up to the newest entry. */
const NO_END_US = Number.MAX_SAFE_INTEGER;
/** How long a replay waits for the client to read what was sent before giving up on it. */
const DRAIN_WAIT_MS = 2000;

export interface LogStreamDeps {
  hub: LogHub;
  repo: Pick<LogRepo, 'page' | 'tsFrom' | 'idBefore'>;
  /** Bytes queued for one subscriber before it is closed with SLOW_CONSUMER_CLOSE. */
  bufferBytes: number;
  pingMs: number;
}

export interface SubscribeFrom {
  /** Resume after this entry id (exclusive). */
  afterId?: number;
  /** Replay from this time (µs) before tailing. */
  startUs?: number;
  /** Stop after this time (µs): the stream closes with 1000 once past it. */
  endUs?: number;
}
export interface LogStreamStart extends SubscribeFrom {
  parsed: ParsedLogFilter;
}
/** Entries are stamped when collected and written just after: past `endTime` by this much, none can still arrive. */
const END_GRACE_MS = 1000;

/**
 * One `/v1/logs/subscribe` connection: replays stored entries (after `afterId`, or from
 * `startTime`), then tails live ones from the hub, one JSON entry per message, in id order
 * and without duplicates. Memory is bounded: a subscriber that lets more than `bufferBytes`
 * pile up (checked after each batch: at most one batch more) is closed with 4008 and resumes
 * with the last id it saw.
 */
export function openLogStream(deps: LogStreamDeps, socket: WebSocket, start: LogStreamStart) {
  const { hub, repo } = deps;
  const { parsed } = start;
  let cursor = 0;
  let live = false;
  let closed = false;
  let lastSent: string | undefined;
  let endTimer: NodeJS.Timeout | undefined;

  const close = (code: number, reason: string) => {
    if (closed) return;
    closed = true;
    socket.close(code, reason);
  };
  const tooSlow = () => close(SLOW_CONSUMER_CLOSE, `slow consumer: reconnect with afterId=${lastSent ?? cursor}`);

  /** Sends the entries past the cursor that match (`matched`: already checked), in one write; then checks the backlog. */
  function sendBatch(rows: LogRow[], matched = false) {
    if (closed) return;
    const pastEnd = start.endUs !== undefined && rows.some((row) => row.tsUs > start.endUs!);
    if (pastEnd) rows = rows.filter((row) => row.tsUs <= start.endUs!);
    const matching = rows.filter((row) => row.id > cursor && (matched || parsed.matches(row)));
    cursor = Math.max(cursor, rows.at(-1)?.id ?? 0);
    if (matching.length) {
      lastSent = String(matching.at(-1)!.id);
      writeEntries(socket, matching);
    }
    if (pastEnd) close(1000, 'endTime reached');
    else if (socket.bufferedAmount > deps.bufferBytes) tooSlow();
  }

  logSubscribers.inc();
  const unsubscribe = hub.subscribe({
    onRows: (rows) => {
      if (live) sendBatch(rows);
    },
  });

  async function drained(): Promise<boolean> {
    for (let waited = 0; socket.bufferedAmount > deps.bufferBytes / 2; waited += 10) {
      if (closed || waited > DRAIN_WAIT_MS) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
    return !closed;
  }

  /**
   * Replays stored entries: pages of the scope's index walk in time order (the same order as ids: LogRepo), the
   * filter matched in slices (scan.ts), so a replay over a large store never holds the event loop or the store.
   */
  async function catchUp() {
    cursor = start.afterId ?? (start.startUs !== undefined ? await repo.idBefore(start.startUs) : hub.lastId);
    let fromUs: number | undefined;
    const slice = slicer();
    while (!closed) {
      const mark = hub.lastId;
      // Where the entries after the cursor start (found again until there is one).
      if (fromUs === undefined) {
        const next = await repo.tsFrom(cursor + 1);
        if (next !== undefined) fromUs = Math.max(next, start.startUs ?? 0);
      }
      const page =
        fromUs === undefined
          ? []
          : await repo.page(parsed.scope, {
              startUs: fromUs,
              endUs: start.endUs ?? NO_END_US,
              backward: false,
              limit: REPLAY_PAGE,
            });
      if (page.length) fromUs = page.at(-1)!.tsUs + 1;
      const matching = await matchInSlices(page, parsed.matches, slice);
      sendBatch(matching, true);
      if (slice.due()) await slice.rest();
      if (page.length === REPLAY_PAGE) {
        cursor = Math.max(cursor, page.at(-1)!.id);
        if (!(await drained())) return tooSlow();
        continue;
      }
      // Everything up to `mark` was visible to that query: nothing before it is left.
      cursor = Math.max(cursor, mark);
      if (cursor >= hub.lastId) {
        live = true; // from here the hub delivers (no await between the check and this line)
        if (start.endUs !== undefined)
          endTimer = setTimeout(
            () => close(1000, 'endTime reached'),
            Math.max(0, start.endUs / 1000 + END_GRACE_MS - Date.now()),
          );
        return;
      }
    }
  }

  let alive = true;
  socket.on('pong', () => {
    alive = true;
  });
  const pinger = setInterval(() => {
    if (!alive) return socket.terminate(); // no pong since the last ping: the peer is gone
    alive = false;
    socket.ping();
  }, deps.pingMs);

  socket.on('close', () => {
    logSubscribers.dec();
    closed = true;
    clearInterval(pinger);
    clearTimeout(endTimer);
    unsubscribe();
  });
  socket.on('message', () => undefined); // clients have nothing to say; their messages are ignored

  catchUp().catch(() => close(1011, 'log store unavailable: reconnect later'));
}
