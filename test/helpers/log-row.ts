import type { LogRow } from '../../src/store/repos/logs.js';

/** A stored log line as the store reads it back (an app's line of srv-a in tea-a, unless `extra` says otherwise). */
export const logRow = (message: string, extra: Partial<LogRow> = {}): LogRow => ({
  id: 1,
  tsUs: 1,
  workspaceId: 'tea-a',
  resourceId: 'srv-a',
  instanceId: null,
  deployId: null,
  type: 'app',
  level: 'info',
  message,
  method: null,
  path: null,
  statusCode: null,
  host: null,
  durationMs: null,
  bytes: null,
  ...extra,
});
