import { AppError } from '../../lib/errors.js';
import { createTurns } from '../../lib/fair-slots.js';
import { PLAN_LIMITS, type Autoscaling, type Plan } from '../../model/services.js';
import type { HttpFilter, HttpMetricRepo } from '../../store/repos/http-metrics.js';
import { LATENCY_BOUNDS_MS, pathGroup, quantileOf } from './http-breakdown.js';
import type { MetricQueries, RangeQuery, Series, SeriesOptions } from './series.js';

/** Render's /v1/metrics/<name> operations that answer series (docs/observability.md, "Metrics"). */
export const METRIC_NAMES = [
  'cpu',
  'cpu-limit',
  'cpu-target',
  'memory',
  'memory-limit',
  'memory-target',
  'http-requests',
  'http-latency',
  'bandwidth',
  'disk-usage',
  'disk-capacity',
  'instance-count',
  'active-connections',
  'replication-lag',
  'task-runs-queued',
  'task-runs-completed',
] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

/** A resource the caller may read: a service (with what its limits and targets come from) or a datastore. */
export type MetricResource = { workspaceId: string } & (
  | { kind: 'service'; id: string; plan: Plan; autoscaling?: Autoscaling | null; diskBytes: number }
  | {
      kind: 'datastore';
      id: string;
      /** Postgres: client connections now (its credentials' open connections). */ connections?: number;
      /** The plan's memory (its server's setting: shared_buffers, maxmemory). */
      memoryBytes: number;
    }
);

export interface FamilyQuery extends RangeQuery, SeriesOptions, HttpFilter {
  aggregateBy?: 'statusCode' | 'host';
  quantiles?: number[];
}

const MiB = 1024 * 1024;
/** The filters as stored: a path as the group it is counted under (`/users/42` -> `/users/*`). */
const httpFilter = (q: HttpFilter): HttpFilter => ({
  hosts: q.hosts?.map((h) => h.toLowerCase()),
  paths: q.paths?.map((p) => (p === '*' ? p : pathGroup(p))),
  statusCodes: q.statusCodes,
});
const DEFAULT_QUANTILE = 0.95;
/** Label values a filter lists at most. */
const FILTER_VALUES = 100;
/**
 * Queries at once in this process (2) and per workspace (1), as the log reader's scans: a range of a week over many
 * series reads thousands of rows, so a workspace's burst waits behind itself, and past 4 waiting (or 10 s) is a 429.
 */
const TURNS = { slots: 2, perKey: 1, maxWaiting: 4, waitMs: 10_000 };
const busy = () => {
  const err = new AppError('rate_limited', "this workspace's metrics queries are busy; retry shortly");
  err.retryAfterSeconds = 1;
  return err;
};

/**
 * Render's metrics family over the stored samples: CPU, memory and bandwidth through the same series code as
 * /v1/metrics/:serviceId/*, the router's request breakdown (http-breakdown.ts), instance counts, and the plan's limits,
 * autoscaling's targets and the disk budget as series; a local datastore's server process is sampled as its one
 * instance (CPU, memory). What this host has no data for (a datastore's CPU limit, replicas, task runs) is an empty
 * list, as Render answers for a resource without such data.
 */
export function createMetricFamily(deps: {
  queries: MetricQueries;
  repo: HttpMetricRepo;
  /** The disk a service may use (SLIPWAY_SERVICE_DISK_MB): artifacts, uploads and build disk. */
  serviceDiskBytes: number;
}) {
  const { queries, repo } = deps;
  const turns = createTurns({ ...TURNS, busy });
  /** Runs a query in the turn of the workspace of its resources (the route checked the caller may read each). */
  const inTurn = <T>(resources: MetricResource[], work: () => Promise<T>) =>
    turns(resources[0]?.workspaceId ?? '', work);
  const resourceLabel = (id: string) => ({ field: 'resource', value: id });
  const round = (v: number) => Math.round(v * 100) / 100;

  /** A series from bucket timestamps and values. */
  const seriesOf = (labels: Series['labels'], unit: string, points: { bucket: Date; value: number }[]): Series => ({
    labels,
    unit,
    values: points.map((p) => ({ timestamp: p.bucket.toISOString(), value: round(p.value), unit })),
  });

  /** One value at every bucket of the range (a limit or target: today's, as Slipway keeps no history of them). */
  function constant(r: { id: string }, q: FamilyQuery, unit: string, value: number): Series[] {
    const { start, end, resolutionSeconds } = queries.rangeOf(q);
    const step = resolutionSeconds * 1000;
    const points = [];
    for (let t = Math.floor(start.getTime() / step) * step; t < end.getTime(); t += step)
      points.push({ bucket: new Date(t), value });
    return [seriesOf([resourceLabel(r.id)], unit, points)];
  }

  /** A gauge known now only (no history): one point, in the bucket of now, when the range holds it. */
  function now(r: { id: string }, q: FamilyQuery, unit: string, value: number): Series[] {
    const { start, end, resolutionSeconds } = queries.rangeOf(q);
    const at = queries.now().getTime();
    if (at < start.getTime() || (q.endTime && at >= end.getTime())) return []; // no endTime: the range ends now
    const step = resolutionSeconds * 1000;
    return [seriesOf([resourceLabel(r.id)], unit, [{ bucket: new Date(Math.floor(at / step) * step), value }])];
  }

  async function httpRequests(id: string, q: FamilyQuery): Promise<Series[]> {
    const by = q.aggregateBy === 'statusCode' ? 'status' : q.aggregateBy === 'host' ? 'host' : undefined;
    const rows = await repo.httpBuckets({ ...httpFilter(q), serviceId: id, ...queries.rangeOf(q), by });
    const byKey = new Map<string, { bucket: Date; value: number }[]>();
    for (const r of rows) {
      const points = byKey.get(r.key) ?? [];
      if (points.length === 0) byKey.set(r.key, points);
      points.push({ bucket: r.bucket, value: r.requests });
    }
    return [...byKey].map(([key, points]) =>
      seriesOf(
        [resourceLabel(id), ...(q.aggregateBy ? [{ field: q.aggregateBy, value: key }] : [])],
        'requests',
        points,
      ),
    );
  }

  async function httpLatency(id: string, q: FamilyQuery): Promise<Series[]> {
    const rows = await repo.httpBuckets({ ...httpFilter(q), serviceId: id, ...queries.rangeOf(q), by: 'latency' });
    const histograms = new Map<number, number[]>();
    for (const r of rows) {
      const t = r.bucket.getTime();
      const counts = histograms.get(t) ?? LATENCY_BOUNDS_MS.map(() => 0);
      histograms.set(t, counts);
      counts[Number(r.key)] = (counts[Number(r.key)] ?? 0) + r.requests;
    }
    if (histograms.size === 0) return []; // no requests: no series, as for every other metric without data
    const quantiles = q.quantiles?.length ? q.quantiles : [DEFAULT_QUANTILE];
    return quantiles.map((quantile) =>
      seriesOf(
        [resourceLabel(id), { field: 'quantile', value: String(quantile) }],
        'ms',
        [...histograms].flatMap(([t, counts]) => {
          const value = quantileOf(counts, quantile);
          return value === undefined ? [] : [{ bucket: new Date(t), value }];
        }),
      ),
    );
  }

  async function serviceSeries(name: MetricName, s: Extract<MetricResource, { kind: 'service' }>, q: FamilyQuery) {
    const limits = PLAN_LIMITS[s.plan];
    const target = (k: 'cpu' | 'memory') =>
      s.autoscaling?.enabled && s.autoscaling.criteria[k].enabled
        ? s.autoscaling.criteria[k].percentage / 100
        : undefined;
    switch (name) {
      case 'cpu':
      case 'memory':
      case 'bandwidth':
        return queries.history(s, name, q);
      case 'cpu-limit':
        return constant(s, q, 'percent', limits.cpuMillicores / 10); // percent of one core, as /metrics/cpu
      case 'memory-limit':
        return constant(s, q, 'bytes', limits.memoryMb * MiB);
      case 'cpu-target': {
        const share = target('cpu');
        return share === undefined ? [] : constant(s, q, 'percent', (limits.cpuMillicores / 10) * share);
      }
      case 'memory-target': {
        const share = target('memory');
        return share === undefined ? [] : constant(s, q, 'bytes', Math.round(limits.memoryMb * MiB * share));
      }
      case 'http-requests':
        return httpRequests(s.id, q);
      case 'http-latency':
        return httpLatency(s.id, q);
      case 'instance-count':
        return [
          seriesOf(
            [resourceLabel(s.id)],
            'instances',
            (await repo.instanceCounts({ serviceId: s.id, ...queries.rangeOf(q) })).map((r) => ({
              bucket: r.bucket,
              value: r.count,
            })),
          ),
        ].filter((x) => x.values.length > 0);
      case 'disk-usage':
        return now(s, q, 'bytes', s.diskBytes);
      case 'disk-capacity':
        return now(s, q, 'bytes', deps.serviceDiskBytes);
      default:
        return []; // connections, replication lag, task runs: nothing a service has here
    }
  }

  async function datastoreSeries(name: MetricName, d: Extract<MetricResource, { kind: 'datastore' }>, q: FamilyQuery) {
    switch (name) {
      case 'cpu':
      case 'memory':
        return queries.history(d, name, q);
      case 'memory-limit':
        return constant(d, q, 'bytes', d.memoryBytes);
      case 'active-connections':
        return d.connections === undefined ? [] : now(d, q, 'connections', d.connections);
      default:
        return [];
    }
  }

  /** Values of a label over the resources' samples in the range, deduplicated, at most FILTER_VALUES. */
  function union(resources: MetricResource[], read: (serviceId: string) => Promise<string[]>): Promise<string[]> {
    return inTurn(resources, async () => {
      const all = new Set<string>();
      for (const r of resources) if (r.kind === 'service') for (const v of await read(r.id)) all.add(v);
      return [...all].slice(0, FILTER_VALUES);
    });
  }

  return {
    /** The series of `name` for each resource, in the order given. */
    async series(name: MetricName, resources: MetricResource[], q: FamilyQuery): Promise<Series[]> {
      queries.rangeOf(q); // a bad range is a 400 whatever the resources
      return inTurn(resources, async () => {
        const out: Series[] = [];
        for (const r of resources)
          if (r.kind === 'service') out.push(...(await serviceSeries(name, r, q)));
          else out.push(...(await datastoreSeries(name, r, q)));
        return out;
      });
    },
    /**
     * GET /metrics/bandwidth-sources: bytes an hour per service, as Render's `total` source (the router does not tell
     * HTTP from WebSocket bytes, and there is no NAT or PrivateLink here). Timestamps are Unix seconds, as Render's.
     */
    bandwidthSources: (resources: MetricResource[], q: RangeQuery) =>
      inTurn(resources, async () => {
        const data = [];
        for (const r of resources) {
          if (r.kind !== 'service') continue;
          const [series] = await queries.history(r, 'bandwidth', { ...q, resolutionSeconds: 3600 });
          data.push({
            labels: { resource: r.id, trafficSource: 'total' as const },
            values: (series?.values ?? []).map((v) => ({ timestamp: Date.parse(v.timestamp) / 1000, value: v.value })),
          });
        }
        return { data };
      }),
    /** GET /metrics/filters/application: the instances sampled in the range. */
    async instances(resources: MetricResource[], q: RangeQuery) {
      const range = queries.rangeOf(q);
      const values = await union(resources, (serviceId) =>
        repo.instanceIds({ serviceId, ...range, limit: FILTER_VALUES }),
      );
      return [{ filter: 'instance' as const, values }];
    },
    /** GET /metrics/filters/http: the hosts and status codes requests had in the range. */
    async httpFilters(resources: MetricResource[], q: RangeQuery & HttpFilter) {
      const range = queries.rangeOf(q);
      const values = (field: 'host' | 'status') =>
        union(resources, (serviceId) =>
          repo.httpValues({ ...httpFilter(q), serviceId, ...range, field, limit: FILTER_VALUES }),
        );
      return [
        { filter: 'host' as const, values: await values('host') },
        { filter: 'statusCode' as const, values: await values('status') },
      ];
    },
    /** GET /metrics/filters/path: the path groups requests had in the range, most requested first. */
    async paths(resources: MetricResource[], q: RangeQuery & HttpFilter): Promise<string[]> {
      const range = queries.rangeOf(q);
      return union(resources, (serviceId) =>
        repo.httpValues({ ...httpFilter(q), serviceId, ...range, field: 'path', limit: FILTER_VALUES }),
      );
    },
  };
}
export type MetricFamily = ReturnType<typeof createMetricFamily>;
