import { and, asc, eq, inArray, lt, desc, sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../db.js';
import { logStreamOverrides, logStreams } from '../schema/index.js';

export type LogStreamRow = typeof logStreams.$inferSelect;
export type LogStreamOverrideRow = typeof logStreamOverrides.$inferSelect;
type OwnerInput = Pick<LogStreamRow, 'endpoint' | 'sealedToken' | 'preview'>;
type OverrideInput = Pick<LogStreamOverrideRow, 'setting' | 'endpoint' | 'sealedToken'>;

/** Render's filters on the list of overrides. */
export interface OverrideQuery {
  workspaceIds?: string[];
  ids?: string[];
  resourceIds?: string[];
  settings?: string[];
  beforeId?: string;
  limit: number;
}

/** A log entry as a stream sends it. */
export interface ForwardRow {
  id: number;
  tsUs: number;
  resourceId: string;
  instanceId?: string | null;
  type: string;
  level: string;
  message: string;
}

const FORWARD_COLUMNS = sql.raw(`id::text as id, (extract(epoch from timestamp) * 1000000)::bigint::text as "tsUs",
  resource_id as "resourceId", instance_id as "instanceId", type, level, message`);

export function createLogStreamRepo(db: Db) {
  /**
   * At most `limit` entries of the workspace, or of one resource, after `afterId` and within `span` ids of it, in id
   * order, and how far that read: to the last entry when `limit` were found, else to the end of the span or the
   * newest entry (ids become visible in order: store/repos/logs.ts). The read walks the primary key over the span and
   * filters by owner (`|| ''` keeps the planner off the owner's time index, which would read all of the owner's
   * entries): one statement reads at most `span` entries whatever the statistics, and the log table needs no index
   * of its own for streams, which every log line would pay for.
   */
  async function forwardBatch(
    scope: { workspaceId: string } | { resourceId: string },
    afterId: number,
    limit: number,
    span: number,
  ): Promise<{ rows: ForwardRow[]; readTo: number }> {
    const owner =
      'workspaceId' in scope
        ? sql`workspace_id || '' = ${scope.workspaceId}`
        : sql`resource_id || '' = ${scope.resourceId}`;
    const [newest] = rowsOf(await db.execute(sql`select coalesce(max(id), 0)::text as id from logs`));
    const rows = rowsOf(
      await db.execute(
        sql`select ${FORWARD_COLUMNS} from logs where ${owner} and id > ${afterId} and id <= ${afterId + span}
          order by logs.id limit ${limit}`,
      ),
    ).map((r): ForwardRow => ({ ...(r as unknown as ForwardRow), id: Number(r.id), tsUs: Number(r.tsUs) }));
    // The newest id was read first: every entry up to it was visible to the second statement.
    const last = rows.at(-1)?.id ?? afterId;
    const readTo = rows.length === limit ? last : Math.max(last, Math.min(afterId + span, Number(newest!.id)));
    return { rows, readTo };
  }

  return {
    getOwner: async (workspaceId: string): Promise<LogStreamRow | undefined> =>
      (await db.select().from(logStreams).where(eq(logStreams.workspaceId, workspaceId)).limit(1))[0],
    /** Creates the workspace's setting (its cursor at `cursor`) or replaces it, keeping its cursor. */
    async putOwner(workspaceId: string, input: OwnerInput, cursor: number): Promise<LogStreamRow> {
      const [row] = await db
        .insert(logStreams)
        .values({ workspaceId, ...input, cursor })
        .onConflictDoUpdate({ target: logStreams.workspaceId, set: { ...input, updatedAt: new Date() } })
        .returning();
      return row!;
    },
    async deleteOwner(workspaceId: string): Promise<boolean> {
      return (await db.delete(logStreams).where(eq(logStreams.workspaceId, workspaceId)).returning()).length > 0;
    },
    getOverride: async (resourceId: string): Promise<LogStreamOverrideRow | undefined> =>
      (await db.select().from(logStreamOverrides).where(eq(logStreamOverrides.resourceId, resourceId)).limit(1))[0],
    /** Creates the resource's override (its cursor at `cursor`) or replaces it, keeping its id and cursor. */
    async putOverride(
      row: { id: string; workspaceId: string; resourceId: string; cursor: number },
      input: OverrideInput,
    ): Promise<LogStreamOverrideRow> {
      const [saved] = await db
        .insert(logStreamOverrides)
        .values({ ...row, ...input })
        .onConflictDoUpdate({ target: logStreamOverrides.resourceId, set: { ...input, updatedAt: new Date() } })
        .returning();
      return saved!;
    },
    async deleteOverride(resourceId: string): Promise<boolean> {
      return (
        (await db.delete(logStreamOverrides).where(eq(logStreamOverrides.resourceId, resourceId)).returning()).length >
        0
      );
    },
    /** Newest first, with Render's filters. */
    listOverrides(q: OverrideQuery): Promise<LogStreamOverrideRow[]> {
      const t = logStreamOverrides;
      return db
        .select()
        .from(t)
        .where(
          and(
            q.workspaceIds ? inArray(t.workspaceId, q.workspaceIds) : undefined,
            q.ids?.length ? inArray(t.id, q.ids) : undefined,
            q.resourceIds?.length ? inArray(t.resourceId, q.resourceIds) : undefined,
            q.settings?.length ? inArray(t.setting, q.settings as LogStreamOverrideRow['setting'][]) : undefined,
            q.beforeId ? lt(t.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(t.id))
        .limit(q.limit);
    },
    /** Every stream there is to forward (the forwarder's view), and the overrides of their workspaces. */
    async all(): Promise<{ owners: LogStreamRow[]; overrides: LogStreamOverrideRow[] }> {
      const owners = await db.select().from(logStreams).orderBy(asc(logStreams.workspaceId));
      const overrides = await db.select().from(logStreamOverrides).orderBy(asc(logStreamOverrides.id));
      return { owners, overrides };
    },
    /** Deletes the overrides of resources that are gone (an override names a service or a datastore, without a key). */
    async pruneOrphans(): Promise<void> {
      await db.execute(sql`delete from log_stream_overrides o
        where not exists (select 1 from services s where s.id = o.resource_id)
          and not exists (select 1 from datastores d where d.id = o.resource_id)`);
    },
    async saveOwnerCursor(workspaceId: string, cursor: number): Promise<void> {
      await db.update(logStreams).set({ cursor }).where(eq(logStreams.workspaceId, workspaceId));
    },
    async saveOverrideCursor(id: string, cursor: number): Promise<void> {
      await db.update(logStreamOverrides).set({ cursor }).where(eq(logStreamOverrides.id, id));
    },
    forwardBatch,
    /** The name of each of `ids` that is a service, and whether it is a preview (frames name their service). */
    async servicesOf(ids: string[]): Promise<Map<string, { name: string; preview: boolean }>> {
      if (!ids.length) return new Map();
      const rows = rowsOf(
        await db.execute(
          sql`select id, name, details ? 'parentServer' as preview from services where id in (${sql.join(
            ids.map((id) => sql`${id}`),
            sql`, `,
          )})`,
        ),
      );
      return new Map(rows.map((r) => [r.id as string, { name: r.name as string, preview: r.preview === true }]));
    },
  };
}
export type LogStreamRepo = ReturnType<typeof createLogStreamRepo>;
