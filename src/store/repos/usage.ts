import { inArray, sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../db.js';
import { datastores, services, usageEntries } from '../schema/index.js';
import { rollUpUsage, usageTotals } from './usage-rollups.js';

export type UsageInsert = typeof usageEntries.$inferInsert;
export type UsageKind = UsageInsert['kind'];

/**
 * The last entry of a source (the one with the latest start; stretches of a source are
 * contiguous, so it also has the latest end). `closed`: it is a zero-length closing entry,
 * written when the meter found the source dead or paused: its time after `endedAt` is not billed.
 */
export interface LastStretch {
  endedAt: Date;
  closed: boolean;
}

/** An instance the meter may have to bill, with its service's workspace and plan and its last stretch. */
export interface MeterableInstance {
  id: string;
  serviceId: string;
  workspaceId: string;
  plan: string;
  status: string;
  pid: number | null;
  startTime: string | null;
  startedAt: Date;
  stoppedAt: Date | null;
  last: LastStretch | undefined;
}

export interface MeterableBuild {
  id: string;
  serviceId: string;
  workspaceId: string;
  plan: string;
  startedAt: Date;
  last: LastStretch | undefined;
}

export interface MeterableDatastore {
  id: string;
  workspaceId: string;
  plan: string;
  suspended: boolean;
  createdAt: Date;
  updatedAt: Date;
  last: LastStretch | undefined;
}

export interface UsageTotalRow {
  workspaceId: string;
  resourceId: string;
  kind: UsageKind;
  plan: string;
  quantity: number;
}

const date = (v: unknown) => (v instanceof Date ? v : new Date(v as string));
const lastOf = (r: Record<string, unknown>): LastStretch | undefined =>
  r.last_end === null || r.last_end === undefined
    ? undefined
    : { endedAt: date(r.last_end), closed: r.last_closed === true };

/** The latest stretch of `source` of `kind`: one probe of the unique (source_id, kind, started_at) index. */
const lateral = (source: ReturnType<typeof sql.raw>, kind: UsageKind) => sql`
  left join lateral (
    select u.ended_at as last_end, (u.started_at = u.ended_at and u.quantity = 0) as last_closed
    from usage_entries u where u.source_id = ${source} and u.kind = ${kind}
    order by u.started_at desc limit 1
  ) u on true`;

export function createUsageRepo(db: Db) {
  return {
    /** Appends stretches; one that is already there (same source, kind and start) is skipped. Returns how many were new. */
    async append(rows: UsageInsert[]): Promise<number> {
      if (rows.length === 0) return 0;
      const inserted = await db
        .insert(usageEntries)
        .values(rows)
        .onConflictDoNothing()
        .returning({ id: usageEntries.id });
      return inserted.length;
    },

    /** Latest stretch per source of one kind. */
    async lastStretches(kind: UsageKind, sourceIds: string[]): Promise<Map<string, LastStretch>> {
      const out = new Map<string, LastStretch>();
      if (sourceIds.length === 0) return out;
      const result = await db.execute(sql`
        select s.id, u.last_end, u.last_closed
        from (values ${sql.join(
          sourceIds.map((id) => sql`(${id}::text)`),
          sql`, `,
        )}) as s(id)
        ${lateral(sql.raw('s.id'), kind)}`);
      for (const r of rowsOf(result)) {
        const last = lastOf(r);
        if (last) out.set(r.id as string, last);
      }
      return out;
    },

    /**
     * Instances with a process start that may still owe usage: every active one, and stopped or
     * failed ones whose last stretch ends before their stop and that were not closed since they started.
     */
    async meterableInstances(): Promise<MeterableInstance[]> {
      const result = await db.execute(sql`
        select i.id, i.service_id, i.status, i.pid, i.start_time, i.started_at, i.stopped_at,
               s.workspace_id, coalesce(i.plan, s.details->>'plan', 'starter') as plan, u.last_end, u.last_closed
        from instances i
        join services s on s.id = i.service_id
        ${lateral(sql.raw('i.id'), 'instance_seconds')}
        where i.started_at is not null and (
          i.status in ('starting', 'running')
          or (i.stopped_at is not null
              and (u.last_end is null or u.last_end < i.stopped_at)
              and not coalesce(u.last_closed and u.last_end >= i.started_at, false)))`);
      return rowsOf(result).map((r) => ({
        id: r.id as string,
        serviceId: r.service_id as string,
        workspaceId: r.workspace_id as string,
        plan: r.plan as string,
        status: r.status as string,
        pid: r.pid === null ? null : Number(r.pid),
        startTime: (r.start_time as string | null) ?? null,
        startedAt: date(r.started_at),
        stoppedAt: r.stopped_at === null ? null : date(r.stopped_at),
        last: lastOf(r),
      }));
    },

    /** Builds under way, with their last stretch (billed as they run, so a crash loses at most one pass). */
    async meterableBuilds(): Promise<MeterableBuild[]> {
      const result = await db.execute(sql`
        select d.id, d.service_id, d.started_at, s.workspace_id, coalesce(s.details->>'plan', 'starter') as plan, u.last_end, u.last_closed
        from deploys d
        join services s on s.id = d.service_id
        ${lateral(sql.raw('d.id'), 'build_seconds')}
        where d.status = 'build_in_progress' and d.started_at is not null`);
      return rowsOf(result).map((r) => ({
        id: r.id as string,
        serviceId: r.service_id as string,
        workspaceId: r.workspace_id as string,
        plan: r.plan as string,
        startedAt: date(r.started_at),
        last: lastOf(r),
      }));
    },

    /** Every datastore (a few per machine) with its last stretch. */
    async meterableDatastores(): Promise<MeterableDatastore[]> {
      const result = await db.execute(sql`
        select d.id, d.workspace_id, d.plan, d.suspended, d.created_at, d.updated_at, u.last_end, u.last_closed
        from datastores d
        ${lateral(sql.raw('d.id'), 'datastore_seconds')}`);
      return rowsOf(result).map((r) => ({
        id: r.id as string,
        workspaceId: r.workspace_id as string,
        plan: r.plan as string,
        suspended: r.suspended === true,
        createdAt: date(r.created_at),
        updatedAt: date(r.updated_at),
        last: lastOf(r),
      }));
    },

    /**
     * Quantities per workspace, resource, kind and plan over [start, end): a stretch straddling
     * a bound counts pro rata of its time inside (bytes are assumed spread evenly over their stretch).
     * `workspaceIds` undefined: every workspace.
     */
    /** Adds new entries to the daily and hourly roll-ups that reports read (usage-rollups.ts). */
    rollUp: (opts: { maxRows: number; lagSeconds: number }) => rollUpUsage(db, opts),

    async totals(q: { workspaceIds: string[] | undefined; start: Date; end: Date }): Promise<UsageTotalRow[]> {
      const scope = q.workspaceIds
        ? q.workspaceIds.length
          ? sql`workspace_id in (${sql.join(
              q.workspaceIds.map((id) => sql`${id}`),
              sql`, `,
            )}) and`
          : sql`false and`
        : sql``;
      const rows = await usageTotals(db, { scope, start: q.start, end: q.end });
      return rows.map((r) => ({
        workspaceId: r.workspace_id as string,
        resourceId: r.resource_id as string,
        kind: r.kind as UsageKind,
        plan: r.plan as string,
        quantity: Number(r.quantity),
      }));
    },

    /** Names of services and datastores (deleted ones are simply missing). */
    async names(ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const [s, d] = await Promise.all([
        db.select({ id: services.id, name: services.name }).from(services).where(inArray(services.id, ids)),
        db.select({ id: datastores.id, name: datastores.name }).from(datastores).where(inArray(datastores.id, ids)),
      ]);
      return new Map([...s, ...d].map((r) => [r.id, r.name]));
    },

    /** Services' disk use now (services.disk_bytes), of the given workspaces (undefined: all): a gauge, not a period's sum. */
    async disk(workspaceIds: string[] | undefined): Promise<{ id: string; workspaceId: string; diskBytes: number }[]> {
      if (workspaceIds?.length === 0) return [];
      const rows = await db
        .select({ id: services.id, workspaceId: services.workspaceId, diskBytes: services.diskBytes })
        .from(services)
        .where(
          workspaceIds
            ? sql`${inArray(services.workspaceId, workspaceIds)} and ${services.diskBytes} > 0`
            : sql`${services.diskBytes} > 0`,
        );
      return rows;
    },

    /** All services' disk use, and how many take more than `budgetBytes` (GET /status). */
    async diskTotals(budgetBytes: number): Promise<{ usedBytes: number; overBudget: number }> {
      const [row] = await db
        .select({
          usedBytes: sql<string>`coalesce(sum(${services.diskBytes}), 0)`,
          overBudget: sql<string>`count(*) filter (where ${services.diskBytes} > ${budgetBytes})`,
        })
        .from(services);
      return { usedBytes: Number(row?.usedBytes ?? 0), overBudget: Number(row?.overBudget ?? 0) };
    },

    /** Workspaces of services (bandwidth is counted by service id). */
    async serviceWorkspaces(
      ids: string[],
    ): Promise<Map<string, { workspaceId: string; plan: string; createdAt: Date }>> {
      if (ids.length === 0) return new Map();
      const rows = await db
        .select({
          id: services.id,
          workspaceId: services.workspaceId,
          details: services.details,
          createdAt: services.createdAt,
        })
        .from(services)
        .where(inArray(services.id, ids));
      return new Map(
        rows.map((r) => [
          r.id,
          {
            workspaceId: r.workspaceId,
            plan: r.details.plan ?? 'starter',
            createdAt: r.createdAt,
          },
        ]),
      );
    },
  };
}
export type UsageRepo = ReturnType<typeof createUsageRepo>;
