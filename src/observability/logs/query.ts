import type { LogRepo, LogRow } from '../../store/repos/logs.js';
import { formatTimeUs, logEntryBody, parseTimeRange, type ParsedLogFilter } from './filters.js';
import { slicer } from './scan.js';

const HOUR_US = 3_600_000_000;
/** Rows per statement while matching in memory: each statement, and each batch of matching, stays short. */
const SCAN_PAGE = 100;

/** How much one query may read before it answers with what it found (SLIPWAY_LOG_QUERY_SECONDS / _SCAN_MB). */
export interface QueryBudget {
  ms: number;
  /** UTF-8 bytes of messages read. */
  bytes: number;
}

interface Window {
  startUs: number;
  endUs: number;
}

/**
 * Render's `GET /logs`: one page within [startTime, endTime] (default: the last hour),
 * newest first unless `direction=forward`. Timestamps are unique (LogRepo), so the next
 * page is simply the range beyond the last entry returned: keyset paging, no OFFSET.
 *
 * SQL only walks the scope (the workspace or its services) in time order; the filter runs in memory, page by page,
 * with the event loop given back between slices. A query past its time or byte budget answers with what it found,
 * `hasMore: true` and the window it has not read yet (which may hold no match at all): never a statement or a loop
 * whose length grows with the stored logs.
 */
export async function queryLogs(
  repo: Pick<LogRepo, 'page'>,
  parsed: ParsedLogFilter,
  q: { startTime?: string; endTime?: string; direction?: 'forward' | 'backward'; limit?: number },
  budget: QueryBudget,
) {
  const given = parseTimeRange(q);
  // endTime defaults to now (or to startTime, when that is in the future: an empty page, not a 400).
  const endUs = given.endUs ?? Math.max(Date.now() * 1000, given.startUs ?? 0);
  const startUs = given.startUs ?? endUs - HOUR_US;
  const backward = q.direction !== 'forward';
  const limit = q.limit ?? 20;
  /** The window left once `row` is read. */
  const past = (w: Window, row: LogRow): Window =>
    backward ? { startUs: w.startUs, endUs: row.tsUs - 1 } : { startUs: row.tsUs + 1, endUs: w.endUs };
  const answer = (found: LogRow[], hasMore: boolean, next: Window) => ({
    hasMore,
    nextStartTime: formatTimeUs(next.startUs),
    nextEndTime: formatTimeUs(next.endUs),
    logs: found.map(logEntryBody),
  });

  if (!parsed.narrows) {
    const rows = await repo.page(parsed.scope, { startUs, endUs, backward, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    return answer(page, hasMore, hasMore ? past({ startUs, endUs }, page.at(-1)!) : { startUs, endUs });
  }

  const started = performance.now();
  const slice = slicer();
  const found: LogRow[] = [];
  let window: Window = { startUs, endUs };
  let bytes = 0;
  for (;;) {
    const rows = await repo.page(parsed.scope, { ...window, backward, limit: SCAN_PAGE });
    for (const row of rows) {
      if (parsed.matches(row)) {
        if (found.length === limit) return answer(found, true, past({ startUs, endUs }, found.at(-1)!));
        found.push(row);
      }
      window = past(window, row);
      bytes += Buffer.byteLength(row.message);
      const spent = bytes >= budget.bytes || performance.now() - started >= budget.ms;
      if (spent && window.startUs <= window.endUs) return answer(found, true, window);
      if (slice.due()) await slice.rest();
    }
    if (rows.length < SCAN_PAGE || window.startUs > window.endUs) return answer(found, false, { startUs, endUs });
    if (slice.due()) await slice.rest();
  }
}
