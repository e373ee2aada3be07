import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Slipway's own Prometheus metrics (GET /metrics). The counters here are per process (what
 * Prometheus expects from a scrape target), so they are module-level: any part of Slipway
 * increments them without being handed anything. Gauges that need a server's store or queue
 * are made per server by `createScrape`.
 */
export const processRegistry = new Registry();

export const httpRequests = new Counter({
  name: 'slipway_http_requests_total',
  help: 'API requests, by method, route and status code',
  labelNames: ['method', 'route', 'status_code'] as const,
  registers: [processRegistry],
});
export const httpDuration = new Histogram({
  name: 'slipway_http_request_duration_seconds',
  help: 'API request latency, by method and route',
  labelNames: ['method', 'route'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [processRegistry],
});
export const deploysFinished = new Counter({
  name: 'slipway_deploys_total',
  help: 'Deploys finished, by final status',
  labelNames: ['status'] as const,
  registers: [processRegistry],
});
export const deployDuration = new Histogram({
  name: 'slipway_deploy_duration_seconds',
  help: 'Deploy duration from start (or creation) to its final status, by status',
  labelNames: ['status'] as const,
  buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900],
  registers: [processRegistry],
});
/** One increment per stored line (the log sink, after each committed batch). */
export const logLinesIngested = new Counter({
  name: 'slipway_log_lines_ingested_total',
  help: 'Log lines stored, by type (app, build, request)',
  labelNames: ['type'] as const,
  registers: [processRegistry],
});
/** App lines over their service's budget (SLIPWAY_LOG_RATE_LINES), dropped by the collector; some counted by estimate (skipped unread). */
export const logLinesDropped = new Counter({
  name: 'slipway_log_lines_dropped_total',
  help: "App log lines dropped over their service's rate limit",
  registers: [processRegistry],
});
/** The log stream: inc() when a WebSocket subscriber connects, dec() when it leaves. */
export const logSubscribers = new Gauge({
  name: 'slipway_log_subscribers',
  help: 'Open /v1/logs/subscribe WebSocket connections',
  registers: [processRegistry],
});
export const metricSamplesWritten = new Counter({
  name: 'slipway_metric_samples_total',
  help: 'Metric sample rows written by the sampler',
  registers: [processRegistry],
});

/** Records one finished deploy. */
export function observeDeploy(status: string, startedAt: Date, finishedAt = new Date()) {
  deploysFinished.inc({ status });
  deployDuration.observe({ status }, Math.max(0, (finishedAt.getTime() - startedAt.getTime()) / 1000));
}

export interface ScrapeDeps {
  /** Jobs waiting per queue. */
  queueDepths(): Promise<{ name: string; size: number }[]>;
  /** Rows by status of a table worth watching (datastores, instances). */
  countsByStatus(): Promise<{ kind: string; status: string; count: number }[]>;
}

/** The text of one scrape: the process counters plus this server's queue and resource gauges, read at scrape time. */
export function createScrape(deps: ScrapeDeps) {
  const serverRegistry = new Registry();
  new Gauge({
    name: 'slipway_queue_depth',
    help: 'Jobs waiting in each pg-boss queue',
    labelNames: ['queue'] as const,
    registers: [serverRegistry],
    async collect() {
      this.reset();
      for (const q of await deps.queueDepths()) this.set({ queue: q.name }, q.size);
    },
  });
  new Gauge({
    name: 'slipway_resources',
    help: 'Instances and datastores, by kind and status',
    labelNames: ['kind', 'status'] as const,
    registers: [serverRegistry],
    async collect() {
      this.reset();
      for (const c of await deps.countsByStatus()) this.set({ kind: c.kind, status: c.status }, c.count);
    },
  });
  const merged = Registry.merge([processRegistry, serverRegistry]);
  return { contentType: merged.contentType, metrics: () => merged.metrics() };
}
