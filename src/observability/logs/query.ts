import type { LogRepo } from '../../store/repos/logs.js';
import { formatTimeUs, logEntryBody, parseTimeRange, type ParsedLogFilter } from './filters.js';

const HOUR_US = 3_600_000_000;

/**
 * Render's `GET /logs`: one page within [startTime, endTime] (default: the last hour),
 * newest first unless `direction=forward`. Timestamps are unique (LogRepo), so the next
 * page is simply the range beyond the last entry returned: keyset paging, no OFFSET.
 */
export async function queryLogs(
  repo: Pick<LogRepo, 'page'>,
  parsed: ParsedLogFilter,
  q: { startTime?: string; endTime?: string; direction?: 'forward' | 'backward'; limit?: number },
) {
  const given = parseTimeRange(q);
  // endTime defaults to now (or to startTime, when that is in the future: an empty page, not a 400).
  const endUs = given.endUs ?? Math.max(Date.now() * 1000, given.startUs ?? 0);
  const startUs = given.startUs ?? endUs - HOUR_US;
  const backward = q.direction !== 'forward';
  const limit = q.limit ?? 20;
  const rows = await repo.page(parsed.filter, { startUs, endUs, backward, limit: limit + 1 });
  const hasMore = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  let next = { startUs, endUs };
  if (hasMore && last) next = backward ? { startUs, endUs: last.tsUs - 1 } : { startUs: last.tsUs + 1, endUs };
  return {
    hasMore,
    nextStartTime: formatTimeUs(next.startUs),
    nextEndTime: formatTimeUs(next.endUs),
    logs: page.map(logEntryBody),
  };
}
