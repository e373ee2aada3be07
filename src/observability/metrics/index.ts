import type PgBoss from 'pg-boss';
import type { Repos } from '../../store/repos/index.js';
import { createScrape, metricSamplesWritten } from '../prometheus.js';
import { createMetricsSampler, createTrafficCounter } from './sampler.js';
import { createMetricQueries } from './series.js';
import type { Logger } from '../../lib/logger.js';

/**
 * Metrics wired together for the composition root: the router's traffic counter, the sampler,
 * the queries behind the routes and the Prometheus scrape (the roll-up job is src/jobs/metrics-rollup.ts).
 */
export function createMetrics(deps: {
  repos: Pick<Repos, 'instances' | 'metrics'>;
  boss: PgBoss;
  intervalMs: number;
  log: Logger;
}) {
  const { repos, boss } = deps;
  const traffic = createTrafficCounter();
  const sampler = createMetricsSampler({
    activeInstances: () => repos.instances.active(),
    insert: async (rows) => {
      await repos.metrics.insert(rows);
      metricSamplesWritten.inc(rows.length);
    },
    intervalMs: deps.intervalMs,
    log: deps.log,
    traffic,
  });
  return {
    traffic,
    queries: createMetricQueries({ repo: repos.metrics, intervalMs: deps.intervalMs }),
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
