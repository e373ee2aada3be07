import { AppError, notFound } from '../../lib/errors.js';
import { createTurns } from '../../lib/fair-slots.js';
import type { LogRepo } from '../../store/repos/logs.js';
import { parseLogFilter, type LogQuery, type ParsedLogFilter } from './filters.js';
import { queryLogs, type QueryBudget } from './query.js';
import { labelValues } from './values.js';

/**
 * Filtered queries (matched in memory) at once in this process, and per workspace: two, so a third request, a health
 * check included, always finds the event loop and the store between their slices; one per workspace, so a tenant's
 * burst waits behind itself, not in front of other tenants.
 */
const SCANS = { slots: 2, perKey: 1 };
/** A workspace's filtered queries waiting for their turn; more are refused with 429. */
const MAX_WAITING = 4;

/** Reading a workspace's logs (Render's GET /logs and /logs/subscribe), once the caller may read the workspace. */
export function createLogReader(deps: {
  repo: Pick<LogRepo, 'page'>;
  /** The workspace of a service; undefined when there is no such service. */
  workspaceOf(serviceId: string): Promise<string | undefined>;
  budget: QueryBudget;
}) {
  const busy = () => {
    const err = new AppError(
      'rate_limited',
      `this workspace's filtered log queries are busy (each reads for up to ${deps.budget.ms / 1000} s); retry shortly`,
    );
    err.retryAfterSeconds = Math.max(1, Math.ceil(deps.budget.ms / 1000));
    return err;
  };
  /** Runs a scan in the workspace's turn (at most its time budget waiting; 429 past MAX_WAITING). */
  const turns = createTurns({ ...SCANS, maxWaiting: MAX_WAITING, waitMs: deps.budget.ms, busy });
  const inTurn = <T>(parsed: ParsedLogFilter, scan: () => Promise<T>) => turns(parsed.scope.workspaceId, scan);
  return {
    /** The validated filter; a `resource` that is not a service of the workspace answers 404, as if it did not exist. */
    async filterFor(workspaceId: string, q: LogQuery): Promise<ParsedLogFilter> {
      for (const id of new Set(q.resource ?? [])) {
        if ((await deps.workspaceOf(id)) !== workspaceId) throw notFound(`resource ${id}`);
      }
      return parseLogFilter(workspaceId, q);
    },
    /** One page of entries (observability/logs/query.ts); a filtered query waits its turn (at most its time budget). */
    async page(parsed: ParsedLogFilter, q: Parameters<typeof queryLogs>[2]) {
      if (!parsed.narrows) return queryLogs(deps.repo, parsed, q, deps.budget);
      return inTurn(parsed, () => queryLogs(deps.repo, parsed, q, deps.budget));
    },
    /** The values of a label (values.ts): a scan, so it takes a turn as a filtered query does. */
    values: (parsed: ParsedLogFilter, q: Parameters<typeof labelValues>[2]) =>
      inTurn(parsed, () => labelValues(deps.repo, parsed, q, deps.budget)),
  };
}
