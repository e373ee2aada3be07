import { sql, type SQL } from 'drizzle-orm';
import { rowsOf, type Db } from '../db.js';
import { metricSamples } from '../schema/index.js';

export type MetricSampleInsert = typeof metricSamples.$inferInsert;
import type { Aggregation } from '../../model/enums.js';
export type { Aggregation };
/** What a series is made of: an instance column (cpu, rss, cgroup memory) or a router counter. */
export type SeriesColumn = 'cpu' | 'memory' | 'cgroupMemory' | 'requests' | 'bytes';

/** Router counters are stored as rows of this pseudo instance (requests in cpu_percent, bytes in memory_bytes): no schema change needed. */
export const ROUTER_SUFFIX = ':router';
export const routerInstanceId = (serviceId: string) => `${serviceId}${ROUTER_SUFFIX}`;

/** Value, max and min columns of each series (roll-ups keep max and min; raw rows have only the value). */
const COLUMNS: Record<SeriesColumn, [string, string, string]> = {
  cpu: ['cpu_percent', 'cpu_max', 'cpu_min'],
  memory: ['memory_bytes', 'memory_max', 'memory_min'],
  cgroupMemory: ['cgroup_memory_bytes', 'cgroup_memory_bytes', 'cgroup_memory_bytes'],
  requests: ['cpu_percent', 'cpu_max', 'cpu_min'],
  bytes: ['memory_bytes', 'memory_max', 'memory_min'],
};
const isCounter = (column: SeriesColumn) => column === 'requests' || column === 'bytes';

/** The SQL aggregate of one bucket; column names come from COLUMNS, never from a request. */
function aggregate(column: SeriesColumn, method: Aggregation): SQL {
  const [value, max, min] = COLUMNS[column];
  if (isCounter(column)) return sql.raw(`sum(${value})`); // counts per bucket add up, whatever the method
  if (method === 'MAX') return sql.raw(`max(coalesce(${max}, ${value}))`);
  if (method === 'MIN') return sql.raw(`min(coalesce(${min}, ${value}))`);
  return sql.raw(`avg(${value})`);
}

/** A range of a service's samples (every resolution) with their `bucket`, as a subquery `s`; `where` picks the rows. */
export const bucketed = (q: BucketRange, where: SQL) => sql`(
  select *, to_timestamp(floor(extract(epoch from "timestamp") / ${q.resolutionSeconds}::float8) * ${q.resolutionSeconds}::float8) as bucket
  from metric_samples
  where service_id = ${q.serviceId} and resolution in (0, 60, 3600)
    and "timestamp" >= ${q.start.toISOString()}::timestamptz and "timestamp" < ${q.end.toISOString()}::timestamptz
    and ${where}
) s`;
/** The rows of instances (not the router's counters). */
export const INSTANCE_ROWS = sql`instance_id not like ${`%${ROUTER_SUFFIX}`}`;
export interface BucketRange {
  serviceId: string;
  start: Date;
  end: Date;
  resolutionSeconds: number;
}

export interface BucketRow {
  /** null: the service's row (every instance of the bucket together). */
  instanceId: string | null;
  bucket: Date;
  value: number;
}

export interface LatestRow {
  instanceId: string;
  timestamp: Date;
  cpuPercent: number;
  memoryBytes: number;
  cgroupMemoryBytes: number | null;
}

export function createMetricRepo(db: Db) {
  return {
    async insert(rows: MetricSampleInsert[]): Promise<void> {
      if (rows.length > 0) await db.insert(metricSamples).values(rows).onConflictDoNothing();
    },

    /**
     * Samples of a service in [start, end) grouped by the database into `resolutionSeconds`
     * buckets, per instance and for the whole service (GROUPING SETS). Every resolution is read:
     * a roll-up deletes what it summarises, so each instant is in exactly one of them, and older
     * ranges come from the roll-ups.
     */
    async buckets(q: BucketRange & { column: SeriesColumn; method: Aggregation }): Promise<BucketRow[]> {
      const routerRows = isCounter(q.column);
      const result = await db.execute(sql`
        select instance_id, bucket, ${aggregate(q.column, q.method)}::float8 as value
        from ${bucketed(q, routerRows ? sql`instance_id = ${routerInstanceId(q.serviceId)}` : INSTANCE_ROWS)}
        group by grouping sets ((instance_id, bucket), (bucket))
        order by bucket, instance_id nulls first`);
      return rowsOf(result)
        .filter((r) => r.value !== null)
        .map((r) => ({
          instanceId: (r.instance_id as string | null) ?? null,
          bucket: new Date(r.bucket as string),
          value: Number(r.value),
        }));
    },

    /**
     * The newest raw sample of each instance of a service taken after `since`; with `warmupMs`, only samples taken that
     * long after their instance started (a process starting burns CPU that says nothing about its load).
     */
    async latest(serviceId: string, since: Date, warmupMs = 0): Promise<LatestRow[]> {
      const result = await db.execute(sql`
        select distinct on (instance_id) instance_id, "timestamp", cpu_percent, memory_bytes, cgroup_memory_bytes
        from metric_samples m
        where service_id = ${serviceId} and resolution = 0 and "timestamp" > ${since.toISOString()}::timestamptz
          and ${INSTANCE_ROWS}
          and (${warmupMs}::int = 0 or exists (
            select 1 from instances i where i.id = m.instance_id
              and i.started_at <= m."timestamp" - make_interval(secs => ${warmupMs}::int / 1000.0)))
        order by instance_id, "timestamp" desc`);
      return rowsOf(result).map((r) => ({
        instanceId: r.instance_id as string,
        timestamp: new Date(r.timestamp as string),
        cpuPercent: Number(r.cpu_percent),
        memoryBytes: Number(r.memory_bytes),
        cgroupMemoryBytes: r.cgroup_memory_bytes === null ? null : Number(r.cgroup_memory_bytes),
      }));
    },

    /** Each instance's sum of raw CPU samples (percent of a core, one per sampling interval) in (from, to]. */
    async cpuSums(serviceId: string, from: Date, to: Date): Promise<Map<string, number>> {
      const result = await db.execute(sql`
        select instance_id, sum(cpu_percent)::float8 as cpu from metric_samples
        where service_id = ${serviceId} and resolution = 0 and ${INSTANCE_ROWS}
          and "timestamp" > ${from.toISOString()}::timestamptz and "timestamp" <= ${to.toISOString()}::timestamptz
        group by instance_id`);
      return new Map(rowsOf(result).map((r) => [String(r.instance_id), Number(r.cpu)]));
    },

    /**
     * Replaces the `from`-resolution rows older than `before` by `to`-second roll-ups (average,
     * max and min; router counters are summed) in one statement, so a crash leaves either both
     * or neither. `before` must be a multiple of `to` so no bucket is split between two runs.
     */
    async rollUp(from: number, to: number, before: Date): Promise<{ rolled: number; written: number }> {
      const result = await db.execute(sql`
        with moved as (
          delete from metric_samples where resolution = ${from} and "timestamp" < ${before.toISOString()}::timestamptz returning *
        ), written as (
          insert into metric_samples (service_id, instance_id, resolution, "timestamp", cpu_percent, cpu_max, cpu_min, memory_bytes, memory_max, memory_min, cgroup_memory_bytes)
          select service_id, instance_id, ${to}::int, to_timestamp(floor(extract(epoch from "timestamp") / ${to}::float8) * ${to}::float8),
            case when instance_id like ${`%${ROUTER_SUFFIX}`} then sum(cpu_percent) else avg(cpu_percent) end,
            max(coalesce(cpu_max, cpu_percent)), min(coalesce(cpu_min, cpu_percent)),
            (case when instance_id like ${`%${ROUTER_SUFFIX}`} then sum(memory_bytes) else avg(memory_bytes) end)::bigint,
            max(coalesce(memory_max, memory_bytes)), min(coalesce(memory_min, memory_bytes)), avg(cgroup_memory_bytes)::bigint
          from moved
          group by service_id, instance_id, 4
          on conflict do nothing
          returning 1
        )
        select (select count(*) from moved)::int as rolled, (select count(*) from written)::int as written`);
      const row = rowsOf(result)[0] ?? {};
      return { rolled: Number(row.rolled ?? 0), written: Number(row.written ?? 0) };
    },

    /** Instances and datastores by status, for Slipway's own gauges (both tables have a status index). */
    async countsByStatus(): Promise<{ kind: string; status: string; count: number }[]> {
      const result = await db.execute(sql`
        select 'instance' as kind, status, count(*)::int as n from instances group by status
        union all
        select kind, status, count(*)::int as n from datastores group by kind, status`);
      return rowsOf(result).map((r) => ({ kind: String(r.kind), status: String(r.status), count: Number(r.n) }));
    },

    /** Deletes every sample (of any resolution) older than `before`. */
    async deleteOlderThan(before: Date): Promise<number> {
      const result = await db.execute(sql`
        with gone as (delete from metric_samples where "timestamp" < ${before.toISOString()}::timestamptz returning 1) select count(*)::int as n from gone`);
      return Number(rowsOf(result)[0]?.n ?? 0);
    },
  };
}
export type MetricRepo = ReturnType<typeof createMetricRepo>;
