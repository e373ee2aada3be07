import { badRequest } from '../../lib/errors.js';
import { compileRegex, compileWildcard, PATTERN_LIMITS } from './patterns.js';
import { LOG_TYPES } from '../../model/enums.js';
import type { LogRow, LogScope } from '../../store/repos/logs.js';

/** Render's filters as query parameters (each may repeat; values of one filter are ORed). */
export interface LogQuery {
  resource?: string[];
  instance?: string[];
  type?: string[];
  level?: string[];
  text?: string[];
  method?: string[];
  statusCode?: string[];
  path?: string[];
  host?: string[];
}

type Matcher = (v: string) => boolean;

/**
 * One filter value: `/…/` is a regular expression, a value with `*` a wildcard, anything
 * else exact (for `text`, a substring). Patterns must follow the rules of patterns.ts (400
 * naming the rule broken); they run in memory on RE2, in linear time (never in SQL).
 */
function parsePattern(
  name: string,
  values: string[] | undefined,
  substring = false,
): ((v: string | null | undefined) => boolean) | undefined {
  if (!values?.length) return undefined;
  const tests: Matcher[] = [];
  for (const value of values) {
    const re = /^\/(.+)\/$/s.exec(value);
    if (re) {
      const compiled = compileRegex(name, value, re[1]!);
      tests.push((v) => compiled.test(v));
    } else if (value.includes('*')) {
      const compiled = compileWildcard(name, value, substring);
      tests.push((v) => compiled.test(v));
    } else if (substring) {
      tests.push((v) => v.includes(value));
    } else {
      tests.push((v) => v === value);
    }
  }
  return (v) => v !== null && v !== undefined && tests.some((t) => t(v));
}

export interface ParsedLogFilter {
  /** What SQL narrows to (the workspace and its services): reads stay index walks (store/repos/logs.ts). */
  scope: LogScope;
  /** Whether `matches` filters anything more than `scope` does (else every row read is an answer). */
  narrows: boolean;
  /** The whole filter, run in memory on each row read (and on the live tail). */
  matches(row: LogRow): boolean;
}

/** Validates Render's filters; `resource` ids must already be checked to belong to the workspace. */
export function parseLogFilter(workspaceId: string, q: LogQuery): ParsedLogFilter {
  for (const type of q.type ?? []) {
    if (!(LOG_TYPES as readonly string[]).includes(type))
      throw badRequest(`type must be one of ${LOG_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
  }
  for (const code of q.statusCode ?? []) {
    if (!/^[0-9*]{1,3}$/.test(code) && !/^\/.+\/$/.test(code))
      throw badRequest(`statusCode must be a status (wildcards and /regex/ allowed), got ${JSON.stringify(code)}`);
  }
  const regexes = [q.level, q.text, q.method, q.statusCode, q.path, q.host]
    .flat()
    .filter((v) => v !== undefined && /^\/.+\/$/s.test(v)).length;
  if (regexes > PATTERN_LIMITS.regexes)
    throw badRequest(`at most ${PATTERN_LIMITS.regexes} /regex/ values per query (got ${regexes})`);
  // Every value is matched against every row the query reads: their total bounds its work per row.
  const chars = [q.level, q.text, q.method, q.statusCode, q.path, q.host]
    .flat()
    .reduce((n, v) => n + (v?.length ?? 0), 0);
  if (chars > PATTERN_LIMITS.totalChars)
    throw badRequest(
      `the filter values of one query may total at most ${PATTERN_LIMITS.totalChars} characters (got ${chars})`,
    );
  const level = parsePattern('level', q.level);
  const text = parsePattern('text', q.text, true);
  const method = parsePattern('method', q.method);
  const statusCode = parsePattern('statusCode', q.statusCode);
  const path = parsePattern('path', q.path);
  const host = parsePattern('host', q.host);
  const inList = (list: string[] | undefined, v: string | null | undefined) =>
    !list?.length || (v !== null && v !== undefined && list.includes(v));
  const narrows =
    [q.instance, q.type].some((v) => v?.length) || [level, text, method, statusCode, path, host].some(Boolean);
  return {
    scope: { workspaceId, resourceIds: q.resource },
    narrows,
    matches: (row) =>
      row.workspaceId === workspaceId &&
      inList(q.resource, row.resourceId) &&
      inList(q.instance, row.instanceId) &&
      inList(q.type, row.type) &&
      (!level || level(row.level)) &&
      (!text || text(row.message)) &&
      (!method || method(row.method)) &&
      (!statusCode ||
        statusCode(row.statusCode === null || row.statusCode === undefined ? null : String(row.statusCode))) &&
      (!path || path(row.path)) &&
      (!host || host(row.host)),
  };
}

/** RFC 3339 → microseconds since the epoch, keeping sub-millisecond digits (Render's timestamps have them). */
export function parseTimeUs(value: string, name: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw badRequest(`${name} must be an RFC 3339 timestamp`);
  const fraction = /\.(\d+)/.exec(value)?.[1] ?? '';
  return ms * 1000 + Number(fraction.padEnd(6, '0').slice(3, 6));
}

/** `startTime`/`endTime` as microseconds, each when given; both given, start must not be after end. */
export function parseTimeRange(q: { startTime?: string; endTime?: string }): { startUs?: number; endUs?: number } {
  const startUs = q.startTime ? parseTimeUs(q.startTime, 'startTime') : undefined;
  const endUs = q.endTime ? parseTimeUs(q.endTime, 'endTime') : undefined;
  if (startUs !== undefined && endUs !== undefined && startUs > endUs)
    throw badRequest('startTime must not be after endTime');
  return { startUs, endUs };
}

export function formatTimeUs(us: number): string {
  const ms = Math.floor(us / 1000);
  return new Date(ms).toISOString().replace('Z', `${String(us - ms * 1000).padStart(3, '0')}Z`);
}

/**
 * Render's log entry: `{id, message, timestamp, labels: [{name, value}]}`, with Render's label
 * names plus `deploy` (the issue asks for it). A request's duration and bytes are in its message.
 */
export function logEntryBody(row: LogRow) {
  const labels: Array<{ name: string; value: string }> = [
    { name: 'resource', value: row.resourceId },
    { name: 'type', value: row.type },
    { name: 'level', value: row.level },
  ];
  const add = (name: string, value: unknown) => {
    if (value !== null && value !== undefined) labels.push({ name, value: String(value) });
  };
  add('instance', row.instanceId);
  add('deploy', row.deployId);
  add('method', row.method);
  add('path', row.path);
  add('statusCode', row.statusCode);
  add('host', row.host);
  return { id: String(row.id), message: row.message, timestamp: formatTimeUs(row.tsUs), labels };
}
export type LogEntryBody = ReturnType<typeof logEntryBody>;
