import { sql, type SQL } from 'drizzle-orm';
import { toStorableText } from '../../lib/text.js';
import { rowsOf, type Db } from '../db.js';
import type { LOG_TYPES } from '../../model/enums.js';

/**
 * Log entries. Timestamps are handled as microseconds since the epoch (a JS number is
 * exact up to 2^53 µs, year 2255): every entry gets a timestamp strictly greater than the
 * one before it (see insertBatch), so (timestamp) alone is a total order equal to the id
 * order, and Render's time-based paging (nextStartTime/nextEndTime) neither repeats nor
 * skips entries that were written in the same millisecond.
 */
export interface NewLogEntry {
  workspaceId: string;
  resourceId: string;
  instanceId?: string | null;
  deployId?: string | null;
  type: (typeof LOG_TYPES)[number];
  level: string;
  message: string;
  method?: string | null;
  path?: string | null;
  statusCode?: number | null;
  host?: string | null;
  durationMs?: number | null;
  bytes?: number | null;
  /** When the line was collected, in ms (Date.now()). */
  timeMs: number;
}

export interface LogRow extends Omit<NewLogEntry, 'timeMs'> {
  id: number;
  /** Microseconds since the epoch, unique per entry. */
  tsUs: number;
}

/**
 * What a read narrows to in SQL: only what an index walks in time order, so every statement reads at most the rows it
 * returns (plus one per resource). Every other filter (instance, type, level, text, …) is matched in memory, in
 * observability/logs: a statement never runs a pattern, nor scans rows it does not return.
 */
export interface LogScope {
  workspaceId: string;
  /** Services of the workspace (the caller checks): when given, only their rows are read. */
  resourceIds?: string[];
}

/** Serializes writers across processes, so ids (and timestamps) become visible in order: a reader that saw id N never later finds a smaller new one. */
const WRITE_LOCK = sql`select pg_advisory_xact_lock(hashtext('slipway.logs'))`;
export const LOG_CHANNEL = 'slipway_logs';
/** Rows per INSERT: a batch stays a short statement, and a short stall for the live tail. */
export const MAX_INSERT = 2000;

// Integer arithmetic: a float8 of epoch seconds cannot hold every microsecond exactly.
const usToTimestamp = (us: number) => sql`(timestamptz 'epoch' + ${us}::bigint * interval '1 microsecond')`;
const TS_US = sql`(extract(epoch from timestamp) * 1000000)::bigint::text`;
const COLUMNS = sql.raw(
  `id::text as id, workspace_id as "workspaceId", resource_id as "resourceId", instance_id as "instanceId", deploy_id as "deployId", type, level, message,
   method, path, status_code as "statusCode", host, duration_ms as "durationMs", bytes::text as bytes`,
);

/**
 * What an app prints, as Postgres text takes it: NUL and lone surrogates become U+FFFD.
 * Otherwise one such line would fail its whole batch, again and again.
 */
const storable = <T extends string | null | undefined>(v: T): T => (typeof v === 'string' ? toStorableText(v) : v) as T;

/**
 * The row an entry becomes, id and timestamp to be filled in, with every optional column null
 * (as a read returns it). Built field by field: one object shape for all rows, which at
 * thousands a second is much faster than spreads.
 */
const draftRow = (e: NewLogEntry): LogRow => ({
  id: 0,
  tsUs: e.timeMs * 1000,
  workspaceId: e.workspaceId,
  resourceId: e.resourceId,
  instanceId: e.instanceId ?? null,
  deployId: e.deployId ?? null,
  type: e.type,
  level: e.level,
  message: storable(e.message),
  method: storable(e.method) ?? null,
  path: storable(e.path) ?? null,
  statusCode: e.statusCode ?? null,
  host: storable(e.host) ?? null,
  durationMs: e.durationMs ?? null,
  bytes: e.bytes ?? null,
});

/**
 * One batch as one statement: the entries as one array parameter per column (unnest; 14
 * parameters a row through drizzle saturated Slipway at thousands of lines a second), stamped
 * ts_i = max(us_i, ts_(i-1) + 1) from the newest stored timestamp, which unrolls to
 * i + max(newest, max over j <= i of (us_j - j)): a window function. Offsets move in the same statement.
 */
function insertSql(entries: LogRow[], offsets: Array<{ stream: string; offset: number }>): SQL {
  const column = <T>(pick: (e: LogRow) => T) => sql.param(entries.map(pick));
  return sql`
    with newest as (select coalesce((extract(epoch from max(timestamp)) * 1000000)::bigint, 0) as us from logs),
    given as (
      select * from unnest(${column((e) => e.workspaceId)}::text[], ${column((e) => e.resourceId)}::text[], ${column((e) => e.instanceId)}::text[],
        ${column((e) => e.deployId)}::text[], ${column((e) => e.type)}::text[], ${column((e) => e.level)}::text[], ${column((e) => e.message)}::text[],
        ${column((e) => e.method)}::text[], ${column((e) => e.path)}::text[], ${column((e) => e.statusCode)}::int[],
        ${column((e) => e.host)}::text[], ${column((e) => e.durationMs)}::float8[], ${column((e) => e.bytes)}::bigint[],
        ${column((e) => String(e.tsUs))}::bigint[])
        with ordinality as u(workspace_id, resource_id, instance_id, deploy_id, type, level, message, method, path, status_code, host, duration_ms, bytes, us, i)
    ),
    batch as (select given.*, i + greatest((select us from newest), max(us - i) over (order by i)) as ts from given),
    sized as (
      insert into log_sizes (resource_id, bytes)
      select resource_id, sum(octet_length(message)) from batch group by resource_id
      on conflict (resource_id) do update set bytes = log_sizes.bytes + excluded.bytes
    ),
    moved as (
      insert into log_offsets (stream, "offset", updated_at)
      select stream, "offset", now() from unnest(${sql.param(offsets.map((o) => o.stream))}::text[], ${sql.param(offsets.map((o) => String(o.offset)))}::bigint[]) as o(stream, "offset")
      on conflict (stream) do update set "offset" = excluded."offset", updated_at = now()
    ),
    inserted as (
      insert into logs (workspace_id, resource_id, instance_id, deploy_id, type, level, message, method, path, status_code, host, duration_ms, bytes, timestamp)
      select workspace_id, resource_id, instance_id, deploy_id, type, level, message, method, path, status_code, host, duration_ms, bytes,
        timestamptz 'epoch' + ts * interval '1 microsecond'
      from batch order by i
      returning id, timestamp
    )
    select inserted.id::text as id, ${TS_US} as "tsUs", batch.i
    from inserted join batch on timestamptz 'epoch' + batch.ts * interval '1 microsecond' = inserted.timestamp`;
}

function toRow(r: Record<string, unknown>): LogRow {
  const { at: _at, ...row } = r; // the merge's sort key
  return {
    ...(row as unknown as LogRow),
    id: Number(r.id),
    tsUs: Number(r.tsUs),
    bytes: r.bytes === null || r.bytes === undefined ? null : Number(r.bytes),
  };
}

export function createLogRepo(db: Db) {
  const rows = async (query: SQL) => rowsOf(await db.execute(query));
  const maxId = async (): Promise<number> =>
    Number((await rows(sql`select coalesce(max(id), 0)::text as id from logs`))[0]!.id);
  /** Deletes the entries `where` picks and takes their bytes off log_sizes, in one statement; returns how many went. */
  const deleteCounted = async (where: SQL) => {
    const [r] = await rows(sql`
      with gone as (delete from logs where ${where} returning resource_id, octet_length(message) as bytes),
      shrunk as (
        update log_sizes s set bytes = s.bytes - g.bytes
        from (select resource_id, sum(bytes) as bytes from gone group by resource_id) g where s.resource_id = g.resource_id
      )
      select count(*)::int as n from gone`);
    return Number(r?.n ?? 0);
  };
  return {
    /**
     * Inserts entries and moves stream offsets in one statement (so a restart neither loses nor
     * repeats lines); returns the rows written, in id order. Timestamps are made strictly
     * increasing past the newest stored one, by the statement itself. `shared` (several processes
     * on one Postgres): under the write lock, taken in a statement of its own first, so the
     * insert's snapshot sees every earlier writer's rows; and NOTIFY in the same transaction.
     * PGlite has one connection and no concurrent writer: the statement alone is enough, and a
     * statement costs there about what a whole batch costs.
     */
    async insertBatch(
      entries: NewLogEntry[],
      offsets: Array<{ stream: string; offset: number }>,
      shared: boolean,
    ): Promise<LogRow[]> {
      if (!entries.length && !offsets.length) return [];
      const drafts = entries.map(draftRow);
      const write = async (t: Db) => {
        return rowsOf(await t.execute(insertSql(drafts, offsets)))
          .map((r) => {
            const row = drafts[Number(r.i) - 1]!;
            row.id = Number(r.id);
            row.tsUs = Number(r.tsUs);
            return row;
          })
          .sort((a, b) => a.id - b.id);
      };
      if (!shared) return write(db);
      return db.transaction(async (tx) => {
        const t = tx as unknown as Db;
        await t.execute(WRITE_LOCK);
        const written = await write(t);
        if (written.length) await t.execute(sql`select pg_notify(${LOG_CHANNEL}, ${String(written.at(-1)!.id)})`);
        return written;
      });
    },
    /** Instances whose output is collected: running ones, and those stopped in the last hour (their last lines). */
    async tailable(): Promise<
      Array<{ instanceId: string; serviceId: string; workspaceId: string; deployId: string; active: boolean }>
    > {
      return (await rows(sql`select i.id as "instanceId", i.service_id as "serviceId", s.workspace_id as "workspaceId", i.deploy_id as "deployId",
          i.status in ('starting', 'running') as active
        from instances i join services s on s.id = i.service_id
        where i.status in ('starting', 'running') or i.stopped_at > now() - interval '1 hour'`)) as never;
    },
    async offsets(streams: string[]): Promise<Map<string, number>> {
      if (!streams.length) return new Map();
      const found = await rows(
        sql`select stream, "offset"::text as "offset" from log_offsets where stream in (${sql.join(
          streams.map((s) => sql`${s}`),
          sql`, `,
        )})`,
      );
      return new Map(found.map((r) => [r.stream as string, Number(r.offset)]));
    },
    /**
     * Keyset page of `scope` on (timestamp) within [startUs, endUs], newest first when backward: at most `limit` rows,
     * read along an index in time order. Several resources are one index walk each, merged (MergeAppend): the
     * statement reads at most `limit` + one row per resource, however rare the resources' rows are in the table.
     */
    async page(
      scope: LogScope,
      opts: { startUs: number; endUs: number; backward: boolean; limit: number },
    ): Promise<LogRow[]> {
      const range = sql`timestamp >= ${usToTimestamp(opts.startUs)} and timestamp <= ${usToTimestamp(opts.endUs)}`;
      // logs.id, not id: a bare name in ORDER BY means the output column, which is id::text.
      const order = opts.backward ? sql`logs.timestamp desc, logs.id desc` : sql`logs.timestamp asc, logs.id asc`;
      const walk = (owner: SQL) =>
        sql`select ${COLUMNS}, ${TS_US} as "tsUs", logs.timestamp as at from logs
          where ${owner} and ${range} order by ${order} limit ${opts.limit}`;
      const resources = [...new Set(scope.resourceIds ?? [])];
      if (!resources.length) return (await rows(walk(sql`workspace_id = ${scope.workspaceId}`))).map(toRow);
      // A service's rows are its workspace's (observability/logs/read.ts checks the ids): its own index, nothing else.
      const walks = resources.map((id) => sql`(${walk(sql`resource_id = ${id}`)})`);
      if (walks.length === 1) return (await rows(walks[0]!)).map(toRow);
      return (
        await rows(
          sql`select * from (${sql.join(walks, sql` union all `)}) w order by at ${opts.backward ? sql`desc` : sql`asc`} limit ${opts.limit}`,
        )
      ).map(toRow);
    },
    /** Entries after `afterId` in id order (the hub's tail of new rows). */
    async after(afterId: number, limit: number): Promise<LogRow[]> {
      return (
        await rows(
          sql`select ${COLUMNS}, ${TS_US} as "tsUs" from logs where id > ${afterId} order by logs.id limit ${limit}`,
        )
      ).map(toRow);
    },
    /** The timestamp of entry `id`, or of the first one after it when it is gone; undefined when there is none. */
    async tsFrom(id: number): Promise<number | undefined> {
      const [r] = await rows(sql`select ${TS_US} as "tsUs" from logs where id >= ${id} order by logs.id limit 1`);
      return r ? Number(r.tsUs) : undefined;
    },
    /** The id just before the first entry at or after `us` (where a replay from a time starts). */
    async idBefore(us: number): Promise<number> {
      const [r] = await rows(
        sql`select id::text as id from logs where timestamp >= ${usToTimestamp(us)} order by logs.timestamp, logs.id limit 1`,
      );
      return r ? Number(r.id) - 1 : maxId();
    },
    maxId,
    async deleteOlderThan(cutoff: Date): Promise<number> {
      return deleteCounted(sql`timestamp < ${cutoff.toISOString()}`);
    },
    /** Deletes each service's oldest entries beyond `maxBytes` of messages (UTF-8 bytes); only services over it are read. */
    async deleteBeyondCap(maxBytes: number): Promise<number> {
      const over = await rows(sql`select resource_id from log_sizes where bytes > ${maxBytes}`);
      let deleted = 0;
      for (const { resource_id: resourceId } of over) {
        deleted += await deleteCounted(sql`id in (
          select id from (select id, sum(octet_length(message)) over (order by timestamp desc, id desc) as running from logs where resource_id = ${resourceId as string}) t
          where running > ${maxBytes})`);
      }
      return deleted;
    },
    async analyze(): Promise<void> {
      await db.execute(sql`analyze logs`);
    },
    /** Offsets of instances that no longer exist (their service was deleted). */
    async deleteOrphanOffsets(): Promise<void> {
      await db.execute(sql`delete from log_offsets where split_part(stream, ':', 1) not in (select id from instances)`);
    },
  };
}
export type LogRepo = ReturnType<typeof createLogRepo>;
