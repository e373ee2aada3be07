import { httpKey } from '../../store/repos/http-metrics.js';
import type { MetricSampleInsert } from '../../store/repos/metrics.js';

/** Upper bounds (ms) of the latency buckets a request is counted in; quantiles are read from them (Prometheus' way). */
export const LATENCY_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, Infinity];
/** Path groups kept per service (for PATHS_KEPT_MS); later ones are counted under `*`. */
const PATHS_PER_SERVICE = 50;
/** Keys (status × latency bucket × host × path) kept per service and interval; later ones are counted coarser. */
const KEYS_PER_SERVICE = 300;
const PATH_DEPTH = 4;
const HOSTS_KEPT = 1000;
const PATHS_KEPT_MS = 3_600_000;

const HEX = /^[0-9a-f-]+$/i;
/** A segment that names one thing among many (a number, an id, a hash, a long token): grouped as `*`. */
function idLike(segment: string): boolean {
  if (segment.length > 32) return true;
  let digits = 0;
  for (let i = 0; i < segment.length; i++) {
    const c = segment.charCodeAt(i);
    if (c >= 48 && c <= 57) digits++;
  }
  return digits === segment.length || digits >= 3 || (segment.length >= 16 && HEX.test(segment));
}

/**
 * The path a request is counted under: no query string, id-like segments as `*` (`/users/42` -> `/users/*`, Render's
 * suggestion form), at most four segments deep; `|` is escaped since it separates a key's fields.
 */
export function pathGroup(path: string): string {
  let end = path.length;
  for (const stop of ['?', '#']) {
    const at = path.indexOf(stop);
    if (at >= 0 && at < end) end = at;
  }
  let out = '';
  let depth = 0;
  for (const segment of path.slice(0, end).split('/')) {
    if (!segment) continue;
    if (depth++ === PATH_DEPTH) {
      out += '/*';
      break;
    }
    out += `/${idLike(segment) ? '*' : segment.slice(0, 48)}`;
  }
  return out ? (out.includes('|') ? out.replaceAll('|', '%7C') : out) : '/';
}

export const latencyBucket = (ms: number) => LATENCY_BOUNDS_MS.findIndex((bound) => ms <= bound);

/**
 * The `q` quantile (0..1) of counts per latency bucket, interpolated linearly inside its bucket (as Prometheus'
 * histogram_quantile); the last, unbounded bucket answers its lower bound. Undefined without requests.
 */
export function quantileOf(counts: number[], q: number): number | undefined {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return undefined;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const n = counts[i] ?? 0;
    if (n > 0 && seen + n >= rank) {
      const lower = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      const upper = LATENCY_BOUNDS_MS[i]!;
      if (!Number.isFinite(upper)) return lower;
      return lower + (upper - lower) * ((rank - seen) / n);
    }
    seen += n;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 2];
}

interface Count {
  requests: number;
  bytes: number;
}

/**
 * The router's requests of each interval counted by status code, latency bucket, host and path group, per service:
 * what GET /v1/metrics/http-requests, http-latency and the filters read. Bounded per service and interval (paths
 * grouped, then at most PATHS_PER_SERVICE of them an hour and KEYS_PER_SERVICE keys an interval), so a scan of random
 * URLs costs a few hundred rows an interval at most.
 */
export function createHttpBreakdown() {
  let services = new Map<string, Map<string, Count>>();
  // The path groups a service is counted under are kept for an hour, not an interval: a roll-up's minute or hour then
  // holds the same 50 at most, not 50 more each interval.
  let paths = new Map<string, Set<string>>();
  let pathsSince = Date.now();
  /** Host as counted, by the router's host: few per service, and asked once a request. */
  let hosts = new Map<string, string>();
  return {
    /** Called once per finished request. */
    record(r: {
      serviceId: string;
      statusCode: number;
      durationMs: number;
      bytesOut: number;
      host: string;
      path: string;
    }) {
      let keys = services.get(r.serviceId);
      if (!keys) services.set(r.serviceId, (keys = new Map()));
      let kept = paths.get(r.serviceId);
      if (!kept) paths.set(r.serviceId, (kept = new Set()));
      let path = pathGroup(r.path);
      if (!kept.has(path)) {
        if (kept.size >= PATHS_PER_SERVICE) path = '*';
        else kept.add(path);
      }
      let host = hosts.get(r.host);
      if (host === undefined) {
        host = r.host.toLowerCase().replace(/:\d+$/, '').replaceAll('|', '').slice(0, 255);
        if (hosts.size < HOSTS_KEPT) hosts.set(r.host, host);
      }
      const latency = latencyBucket(r.durationMs);
      let key = httpKey(r.serviceId, r.statusCode, latency, host, path);
      // Over the cap: counted by status class and latency only, so the keys stay bounded (5 classes x 12 buckets more).
      if (!keys.has(key) && keys.size >= KEYS_PER_SERVICE)
        key = httpKey(r.serviceId, `${Math.floor(r.statusCode / 100)}xx`, latency, '*', '*');
      const c = keys.get(key);
      if (c) {
        c.requests++;
        c.bytes += r.bytesOut;
      } else keys.set(key, { requests: 1, bytes: r.bytesOut });
    },
    /** The interval's counts as metric sample rows (requests in cpu_percent, bytes in memory_bytes), starting a new one. */
    drain(timestamp: Date): MetricSampleInsert[] {
      const taken = services;
      services = new Map();
      hosts = new Map();
      if (timestamp.getTime() - pathsSince >= PATHS_KEPT_MS) {
        paths = new Map();
        pathsSince = timestamp.getTime();
      }
      return [...taken].flatMap(([serviceId, keys]) =>
        [...keys].map(([instanceId, c]) => ({
          serviceId,
          instanceId,
          resolution: 0,
          timestamp,
          cpuPercent: c.requests,
          memoryBytes: c.bytes,
        })),
      );
    },
  };
}
export type HttpBreakdown = ReturnType<typeof createHttpBreakdown>;
