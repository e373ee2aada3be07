import { sql, type SQL } from 'drizzle-orm';
import { rowsOf, type Db } from '../db.js';
import { bucketed, INSTANCE_ROWS, ROUTER_SUFFIX, type BucketRange } from './metrics.js';

/**
 * The router's requests by status code, latency bucket, host and path group are rows of pseudo instances
 * `<service>|<status>|<latency bucket>|<host>|<path>:router` (requests in cpu_percent, bytes in memory_bytes): they end in
 * the router's suffix, so roll-ups sum them and CPU, memory and the autoscaler leave them out, with no schema change.
 * The fields never hold `|` (observability/metrics/http-breakdown.ts escapes it).
 */
export const httpKey = (serviceId: string, status: number | string, latency: number, host: string, path: string) =>
  `${serviceId}|${status}|${latency}|${host}|${path}${ROUTER_SUFFIX}`;

/** A field of a key, in SQL: split_part's positions of the fields above (the path without the suffix). */
const FIELD = {
  status: sql.raw(`split_part(instance_id, '|', 2)`),
  latency: sql.raw(`split_part(instance_id, '|', 3)`),
  host: sql.raw(`split_part(instance_id, '|', 4)`),
  path: sql.raw(`left(split_part(instance_id, '|', 5), -${ROUTER_SUFFIX.length})`),
};
export type HttpField = keyof typeof FIELD;

export interface HttpFilter {
  hosts?: string[];
  paths?: string[];
  statusCodes?: string[];
}

/** The breakdown rows of a service, narrowed by the filters (values bound as parameters). */
function breakdownRows(serviceId: string, f: HttpFilter): SQL {
  const parts = [sql`left(instance_id, ${serviceId.length + 1}) = ${`${serviceId}|`}`];
  const within = (field: SQL, values?: string[]) => {
    if (values?.length)
      parts.push(
        sql`${field} in (${sql.join(
          values.map((v) => sql`${v}`),
          sql`, `,
        )})`,
      );
  };
  within(FIELD.host, f.hosts);
  within(FIELD.path, f.paths);
  within(FIELD.status, f.statusCodes);
  return sql.join(parts, sql` and `);
}

export function createHttpMetricRepo(db: Db) {
  return {
    /** Requests (and bytes) per bucket, by `by` (a field, or nothing: the total), of the requests the filters keep. */
    async httpBuckets(
      q: BucketRange & HttpFilter & { by?: HttpField },
    ): Promise<{ bucket: Date; key: string; requests: number; bytes: number }[]> {
      const key = q.by ? FIELD[q.by] : sql`''`;
      const result = await db.execute(sql`
        select bucket, ${key} as key, sum(cpu_percent)::float8 as requests, sum(memory_bytes)::float8 as bytes
        from ${bucketed(q, breakdownRows(q.serviceId, q))}
        group by bucket, 2 order by bucket, 2`);
      return rowsOf(result).map((r) => ({
        bucket: new Date(r.bucket as string),
        key: String(r.key),
        requests: Number(r.requests),
        bytes: Number(r.bytes),
      }));
    },

    /** The values of a field seen in the range (at most `limit`, most requested first), of the requests the filters keep. */
    async httpValues(q: BucketRange & HttpFilter & { field: HttpField; limit: number }): Promise<string[]> {
      const result = await db.execute(sql`
        select ${FIELD[q.field]} as value from ${bucketed(q, breakdownRows(q.serviceId, q))}
        group by 1 order by sum(cpu_percent) desc, 1 limit ${q.limit}`);
      return rowsOf(result).map((r) => String(r.value));
    },

    /** The router's raw counts of a service in (from, to], by status code and host: requests and bytes sent. */
    async totals(serviceId: string, from: Date, to: Date) {
      const result = await db.execute(sql`
        select ${FIELD.status} as status, ${FIELD.host} as host,
          sum(cpu_percent)::float8 as requests, sum(memory_bytes)::float8 as bytes
        from metric_samples
        where service_id = ${serviceId} and resolution = 0 and ${breakdownRows(serviceId, {})}
          and "timestamp" > ${from.toISOString()}::timestamptz and "timestamp" <= ${to.toISOString()}::timestamptz
        group by 1, 2`);
      return rowsOf(result).map((r) => ({
        status: String(r.status),
        host: String(r.host),
        requests: Number(r.requests),
        bytes: Number(r.bytes),
      }));
    },

    /** Instances that were sampled in the range (at most `limit`). */
    async instanceIds(q: BucketRange & { limit: number }): Promise<string[]> {
      const result = await db.execute(sql`
        select distinct instance_id from ${bucketed(q, INSTANCE_ROWS)} order by 1 limit ${q.limit}`);
      return rowsOf(result).map((r) => String(r.instance_id));
    },

    /** Instances per bucket: the most sampled together at one instant of it (every instance is sampled each tick). */
    async instanceCounts(q: BucketRange): Promise<{ bucket: Date; count: number }[]> {
      const result = await db.execute(sql`
        select bucket, max(n)::int as count from (
          select bucket, "timestamp", count(distinct instance_id) as n from ${bucketed(q, INSTANCE_ROWS)}
          group by bucket, "timestamp"
        ) t group by bucket order by bucket`);
      return rowsOf(result).map((r) => ({ bucket: new Date(r.bucket as string), count: Number(r.count) }));
    },
  };
}
export type HttpMetricRepo = ReturnType<typeof createHttpMetricRepo>;
