import type PgBoss from 'pg-boss';
import type { Repos } from '../../store/repos/index.js';
import { createScrape, metricSamplesWritten } from '../prometheus.js';
import { createMetricFamily } from './family.js';
import { createHttpBreakdown } from './http-breakdown.js';
import { createMetricsSampler, createTrafficCounter } from './sampler.js';
import { createMetricQueries } from './series.js';
import type { Logger } from '../../lib/logger.js';

/**
 * Metrics wired together for the composition root: the router's traffic counter, the sampler,
 * the queries behind the routes and the Prometheus scrape (the roll-up job is src/jobs/metrics-rollup.ts).
 */
export function createMetrics(deps: {
  repos: Pick<Repos, 'instances' | 'metrics' | 'httpMetrics'>;
  boss: PgBoss;
  intervalMs: number;
  /** A service's disk budget (GET /v1/metrics/disk-capacity). */
  serviceDiskBytes: number;
  /** Datastores' server processes (local ones), sampled as their datastore's only instance. */
  datastoreProcesses(): Promise<Array<{ id: string; pid: number; startTime: string }>>;
  log: Logger;
}) {
  const { repos, boss } = deps;
  const traffic = createTrafficCounter();
  const http = createHttpBreakdown();
  const queries = createMetricQueries({ repo: repos.metrics, intervalMs: deps.intervalMs });
  const sampler = createMetricsSampler({
    activeInstances: async () => [
      ...(await repos.instances.active()), // not one-off jobs: they are not the service's instances
      ...(await deps.datastoreProcesses()).map((d) => ({ ...d, serviceId: d.id, status: 'running' as const })),
    ],
    insert: async (rows) => {
      await repos.metrics.insert(rows);
      metricSamplesWritten.inc(rows.length);
    },
    intervalMs: deps.intervalMs,
    log: deps.log,
    traffic,
    http,
  });
  return {
    traffic,
    /** The router's requests by status, latency, host and path (fed per request, like `traffic`). */
    http,
    queries: {
      ...queries,
      family: createMetricFamily({ queries, repo: repos.httpMetrics, serviceDiskBytes: deps.serviceDiskBytes }),
    },
    prometheus: createScrape({
      queueDepths: async () =>
        Promise.all(
          (await boss.getQueues()).map(async (q) => ({ name: q.name, size: await boss.getQueueSize(q.name) })),
        ),
      countsByStatus: () => repos.metrics.countsByStatus(),
    }),
    start: () => sampler.start(),
    stop: () => sampler.stop(),
  };
}
/** What the HTTP routes read (GET /v1/metrics/…). */
export type MetricsApi = ReturnType<typeof createMetrics>['queries'];
