import type { Attributes } from '@opentelemetry/api';
import type { MetricPoint } from '../../integrations/otlp-metrics.js';
import { PLAN_LIMITS } from '../../model/services.js';
import type { HttpMetricRepo } from '../../store/repos/http-metrics.js';
import type { MetricRepo } from '../../store/repos/metrics.js';
import type { ServiceRow } from '../../store/repos/services.js';

/** Render's metric names, units and descriptions (docs/observability.md, "Metrics streams"). */
const METRICS = {
  cpuLimit: ['render.service.cpu.limit', '1', 'CPU cores the instance may use (its plan)', 'gauge'],
  cpuTime: ['render.service.cpu.time', 's', 'CPU time the instance used, cumulative', 'sum'],
  memoryLimit: ['render.service.memory.limit', 'By', 'Memory the instance may use (its plan)', 'gauge'],
  memoryUsage: ['render.service.memory.usage', 'By', 'Memory the instance uses (its cgroup, else its RSS)', 'gauge'],
  memoryRss: ['render.service.memory.rss', 'By', 'Resident memory of the instance’s processes', 'gauge'],
  transmit: ['render.service.network.transmit.bytes', 'By', 'Bytes the router sent for the service, cumulative', 'sum'],
  requests: ['render.service.http.requests.total', '{request}', 'HTTP requests, cumulative', 'sum'],
} as const satisfies Record<string, readonly [string, string, string, MetricPoint['kind']]>;

/**
 * A stream's cumulative sums (CPU time per instance, requests per status and host, bytes sent): OTLP sums are
 * totals since the stream's start, so each export adds its window to them.
 */
export type Totals = Map<string, MetricPoint>;

/**
 * The points of one export of one workspace: per instance, its plan's limits, its newest memory and its CPU time;
 * per service, the router's requests and bytes. `from`/`to` is the window of samples this export adds to the sums.
 * Instances gone from the window leave the totals (their series end); the router's sums stay.
 */
export async function pointsOf(
  deps: {
    metrics: Pick<MetricRepo, 'latest' | 'cpuSums'>;
    http: Pick<HttpMetricRepo, 'totals'>;
    /** The sampling interval: each raw CPU sample stands for that long. */
    sampleSeconds: number;
  },
  services: ServiceRow[],
  window: { from: Date; to: Date },
  totals: Totals,
): Promise<MetricPoint[]> {
  const points: MetricPoint[] = [];
  const add = (m: (typeof METRICS)[keyof typeof METRICS], value: number, attributes: Attributes) =>
    points.push({ name: m[0], unit: m[1], description: m[2], kind: m[3], value, attributes });
  const addUp = (m: (typeof METRICS)[keyof typeof METRICS], delta: number, attributes: Attributes) => {
    const key = `${m[0]} ${JSON.stringify(attributes)}`;
    const before = totals.get(key);
    const value = (before?.value ?? 0) + delta;
    const startTime = before?.startTime ?? window.from;
    totals.set(key, { name: m[0], unit: m[1], description: m[2], kind: m[3], value, attributes, startTime });
    seen.add(key);
  };
  const seen = new Set<string>();

  for (const service of services) {
    if (service.type === 'static_site') continue; // no instances, as on Render
    const base = { 'service.name': service.name, 'service.id': service.id };
    const limits = PLAN_LIMITS[service.details.plan];
    const cpu = await deps.metrics.cpuSums(service.id, window.from, window.to);
    for (const row of await deps.metrics.latest(service.id, window.from)) {
      const attrs = { ...base, 'service.instance.id': row.instanceId };
      add(METRICS.cpuLimit, limits.cpuMillicores / 1000, attrs);
      add(METRICS.memoryLimit, limits.memoryMb * 1024 * 1024, attrs);
      add(METRICS.memoryUsage, row.cgroupMemoryBytes ?? row.memoryBytes, attrs);
      add(METRICS.memoryRss, row.memoryBytes, attrs);
      addUp(METRICS.cpuTime, ((cpu.get(row.instanceId) ?? 0) / 100) * deps.sampleSeconds, attrs);
    }
    // The router's counts are the service's, not an instance's: Render's instance id is the service's then.
    const routed = { ...base, 'service.instance.id': service.id };
    let bytes = 0;
    for (const t of await deps.http.totals(service.id, window.from, window.to)) {
      addUp(METRICS.requests, t.requests, { ...routed, host: t.host, status_code: t.status });
      bytes += t.bytes;
    }
    addUp(METRICS.transmit, bytes, routed);
  }
  // Every sum is sent each time: the router's stay through a quiet minute; an instance's CPU time and a deleted
  // service's sums end with them.
  const ids = new Set(services.map((s) => s.id));
  for (const [key, point] of totals) {
    const gone = !ids.has(String(point.attributes['service.id']));
    if (gone || (!seen.has(key) && point.name === METRICS.cpuTime[0])) totals.delete(key);
    else points.push(point);
  }
  return points;
}
