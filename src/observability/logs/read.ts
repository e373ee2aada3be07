import { badRequest, notFound } from '../../lib/errors.js';
import { pgCode } from '../../store/db.js';
import type { LogRepo } from '../../store/repos/logs.js';
import { parseLogFilter, type LogQuery, type ParsedLogFilter } from './filters.js';
import { queryLogs } from './query.js';

/** Postgres refused a regular expression JS accepted (their dialects differ slightly): 2201B. */
const isBadRegex = (err: unknown) => pgCode(err) === '2201B';

/** Reading a workspace's logs (Render's GET /logs and /logs/subscribe), once the caller may read the workspace. */
export function createLogReader(deps: {
  repo: Pick<LogRepo, 'page'>;
  /** The workspace of a service; undefined when there is no such service. */
  workspaceOf(serviceId: string): Promise<string | undefined>;
}) {
  return {
    /** The validated filter; a `resource` that is not a service of the workspace answers 404, as if it did not exist. */
    async filterFor(workspaceId: string, q: LogQuery): Promise<ParsedLogFilter> {
      for (const id of new Set(q.resource ?? [])) {
        if ((await deps.workspaceOf(id)) !== workspaceId) throw notFound(`resource ${id}`);
      }
      return parseLogFilter(workspaceId, q);
    },
    /** One page of entries (observability/logs/query.ts). */
    async page(parsed: ParsedLogFilter, q: Parameters<typeof queryLogs>[2]) {
      try {
        return await queryLogs(deps.repo, parsed, q);
      } catch (err) {
        if (isBadRegex(err)) throw badRequest(`invalid regular expression: ${(err as Error).message}`);
        throw err;
      }
    },
  };
}
