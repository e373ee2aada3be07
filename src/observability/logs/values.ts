import type { LogRepo, LogRow } from '../../store/repos/logs.js';
import { parseTimeRange, type ParsedLogFilter } from './filters.js';
import type { QueryBudget } from './query.js';
import { slicer } from './scan.js';

/** Render's labels GET /logs/values lists the values of. */
export const VALUE_LABELS = ['instance', 'host', 'statusCode', 'method', 'level', 'type'] as const;
export type ValueLabel = (typeof VALUE_LABELS)[number];

const HOUR_US = 3_600_000_000;
const SCAN_PAGE = 100;

const valueOf: Record<ValueLabel, (row: LogRow) => unknown> = {
  instance: (r) => r.instanceId,
  host: (r) => r.host,
  statusCode: (r) => r.statusCode,
  method: (r) => r.method,
  level: (r) => r.level,
  type: (r) => r.type,
};

/**
 * Render's `GET /logs/values`: the distinct values of `label` among the entries the filter matches in
 * [startTime, endTime] (default: the last hour), newest entries first, at most `limit` of them, sorted. The same reads
 * and budget as a filtered GET /logs (query.ts): pages of 100 rows along an index, matched in memory in slices, and a
 * scan that reaches its time or byte budget answers with the values it found.
 */
export async function labelValues(
  repo: Pick<LogRepo, 'page'>,
  parsed: ParsedLogFilter,
  q: { label: ValueLabel; startTime?: string; endTime?: string; limit?: number },
  budget: QueryBudget,
): Promise<string[]> {
  const given = parseTimeRange(q);
  let endUs = given.endUs ?? Math.max(Date.now() * 1000, given.startUs ?? 0);
  const startUs = given.startUs ?? endUs - HOUR_US;
  const limit = q.limit ?? 20;
  const pick = valueOf[q.label];
  const found = new Set<string>();
  const started = performance.now();
  const slice = slicer();
  let bytes = 0;
  while (startUs <= endUs && found.size < limit) {
    const rows = await repo.page(parsed.scope, { startUs, endUs, backward: true, limit: SCAN_PAGE });
    for (const row of rows) {
      const value = pick(row);
      if (value !== null && value !== undefined && parsed.matches(row)) found.add(String(value));
      endUs = row.tsUs - 1;
      bytes += Buffer.byteLength(row.message);
      if (found.size >= limit || bytes >= budget.bytes || performance.now() - started >= budget.ms)
        return [...found].sort();
      if (slice.due()) await slice.rest();
    }
    if (rows.length < SCAN_PAGE) break;
  }
  return [...found].sort();
}
