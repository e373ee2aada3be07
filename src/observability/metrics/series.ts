import { badRequest } from '../../lib/errors.js';
import { PLAN_LIMITS, type Plan } from '../../model/services.js';
import type { Aggregation, MetricRepo, SeriesColumn } from '../../store/repos/metrics.js';

/** Render's metric series: `[{labels:[{field,value}], unit, values:[{timestamp,value}]}]`. */
export interface Series {
  labels: { field: string; value: string }[];
  unit: string;
  /** Each value repeats the unit: Render's schema requires it on values too. */
  values: { timestamp: string; value: number; unit: string }[];
}

export const HISTORY_METRICS = ['cpu', 'memory', 'http_requests', 'bandwidth'] as const;
export type HistoryMetric = (typeof HISTORY_METRICS)[number];
export const CPU_RELATIVE_TO = ['core', 'limit'] as const;
export const MEMORY_SOURCES = ['rss', 'cgroup'] as const;
/** CPU as percent of one core (default) or of the plan's CPU limit; memory as the process tree's RSS (default) or the cgroup's usage. */
export interface SeriesOptions {
  relativeTo?: (typeof CPU_RELATIVE_TO)[number];
  source?: (typeof MEMORY_SOURCES)[number];
  aggregationMethod?: Aggregation;
  /** Only these instances (Render's `instance` filter); the service series is dropped then. */
  instances?: string[];
}

const MAX_POINTS = 10_000;
/** Render's range parameters: the last hour in 60 s buckets by default. */
export interface RangeQuery {
  startTime?: string;
  endTime?: string;
  resolutionSeconds?: number;
}
const DEFAULT_RANGE_MS = 3_600_000; // Render's default: the last hour

export interface MetricQueryDeps {
  repo: Pick<MetricRepo, 'buckets' | 'latest'>;
  /** Sampling interval: the finest resolution there is, and how old a "current" sample may be. */
  intervalMs: number;
  now?: () => Date;
}

/** Reads the stored samples as Render-shaped series: the latest values, or a time range downsampled by the database. */
export function createMetricQueries(deps: MetricQueryDeps) {
  const now = () => deps.now?.() ?? new Date();

  const columnOf = (metric: HistoryMetric, o: SeriesOptions): SeriesColumn =>
    metric === 'cpu'
      ? 'cpu'
      : metric === 'memory'
        ? o.source === 'cgroup'
          ? 'cgroupMemory'
          : 'memory'
        : metric === 'http_requests'
          ? 'requests'
          : 'bytes';
  const unitOf = (metric: HistoryMetric) =>
    metric === 'cpu' ? 'percent' : metric === 'http_requests' ? 'requests' : 'bytes';
  /** Percent of one core -> percent of the plan's limit (1000 millicores = one core). */
  const scaleOf = (metric: HistoryMetric, plan: Plan | undefined, o: SeriesOptions) =>
    metric === 'cpu' && o.relativeTo === 'limit' && plan ? 1000 / PLAN_LIMITS[plan].cpuMillicores : 1;

  const labels = (serviceId: string, instanceId: string | null) => [
    { field: 'resource', value: serviceId },
    ...(instanceId ? [{ field: 'instance', value: instanceId }] : []),
  ];
  const round = (v: number) => Math.round(v * 100) / 100;

  /** Per-instance series first, then the service's (all instances aggregated), in `rows` order of time. */
  function toSeries(
    service: { id: string },
    metric: HistoryMetric,
    o: SeriesOptions,
    rows: { instanceId: string | null; timestamp: Date; value: number }[],
    scale: number,
  ): Series[] {
    const byKey = new Map<string, Series>();
    const counters = metric === 'http_requests' || metric === 'bandwidth';
    for (const row of rows) {
      if (o.instances?.length && (!row.instanceId || !o.instances.includes(row.instanceId))) continue;
      if (counters && row.instanceId) continue; // router counts are per service
      const key = row.instanceId ?? '';
      let series = byKey.get(key);
      if (!series)
        byKey.set(key, (series = { labels: labels(service.id, row.instanceId), unit: unitOf(metric), values: [] }));
      series.values.push({
        timestamp: row.timestamp.toISOString(),
        value: round(row.value * scale),
        unit: series.unit,
      });
    }
    return [...byKey.entries()]
      .sort(([a], [b]) => (a === '' ? 1 : b === '' ? -1 : a.localeCompare(b)))
      .map(([, s]) => s);
  }

  /** A query's range and bucket size, checked: start before end, at least the sampling interval, at most MAX_POINTS buckets. */
  function rangeOf(q: RangeQuery): { start: Date; end: Date; resolutionSeconds: number } {
    const end = q.endTime ? new Date(q.endTime) : now();
    const start = q.startTime ? new Date(q.startTime) : new Date(end.getTime() - DEFAULT_RANGE_MS);
    if (start >= end) throw badRequest('startTime must be before endTime');
    const minResolution = Math.max(1, Math.ceil(deps.intervalMs / 1000));
    const resolutionSeconds = q.resolutionSeconds ?? Math.max(60, minResolution);
    if (resolutionSeconds < minResolution)
      throw badRequest(`resolutionSeconds must be at least the sampling interval (${minResolution} s)`);
    if ((end.getTime() - start.getTime()) / 1000 / resolutionSeconds > MAX_POINTS) {
      throw badRequest(
        `that range at that resolution is more than ${MAX_POINTS} points: raise resolutionSeconds or narrow the range`,
      );
    }
    return { start, end, resolutionSeconds };
  }

  return {
    rangeOf,
    now,
    /** The newest sample of each instance (not older than three intervals) and their aggregate for the service. */
    async current(service: { id: string; plan: Plan }, metric: 'cpu' | 'memory', o: SeriesOptions): Promise<Series[]> {
      const latest = await deps.repo.latest(service.id, new Date(now().getTime() - 3 * deps.intervalMs - 1000));
      const pick = (r: (typeof latest)[number]) =>
        metric === 'cpu' ? r.cpuPercent : o.source === 'cgroup' ? r.cgroupMemoryBytes : r.memoryBytes;
      const rows: { instanceId: string | null; timestamp: Date; value: number }[] = latest.flatMap((r) => {
        const value = pick(r);
        return value === null ? [] : [{ instanceId: r.instanceId, timestamp: r.timestamp, value }];
      });
      if (rows.length > 0 && !o.instances?.length) {
        const values = rows.map((r) => r.value);
        const method = o.aggregationMethod ?? 'AVG';
        const value =
          method === 'MAX'
            ? Math.max(...values)
            : method === 'MIN'
              ? Math.min(...values)
              : values.reduce((a, b) => a + b, 0) / values.length;
        rows.push({
          instanceId: null,
          timestamp: new Date(Math.max(...rows.map((r) => r.timestamp.getTime()))),
          value,
        });
      }
      return toSeries(service, metric, o, rows, scaleOf(metric, service.plan, o));
    },

    /** Stored samples in [startTime, endTime) in `resolutionSeconds` buckets, aggregated by the database. */
    /** `service`: a service, or a datastore (no plan: no CPU limit to be relative to). */
    async history(
      service: { id: string; plan?: Plan },
      metric: HistoryMetric,
      q: SeriesOptions & RangeQuery,
    ): Promise<Series[]> {
      const { start, end, resolutionSeconds } = rangeOf(q);
      const rows = await deps.repo.buckets({
        serviceId: service.id,
        column: columnOf(metric, q),
        method: q.aggregationMethod ?? 'AVG',
        start,
        end,
        resolutionSeconds,
      });
      return toSeries(
        service,
        metric,
        q,
        rows.map((r) => ({ instanceId: r.instanceId, timestamp: r.bucket, value: r.value })),
        scaleOf(metric, service.plan, q),
      );
    },
  };
}
export type MetricQueries = ReturnType<typeof createMetricQueries>;
