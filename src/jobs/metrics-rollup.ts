import type PgBoss from 'pg-boss';
import { rollUpMetrics } from '../observability/metrics/rollup.js';
import type { MetricRepo } from '../store/repos/metrics.js';
import { schedulePeriodic } from './queue.js';

export const METRICS_ROLLUP_QUEUE = 'metrics-rollup';

/** Registers the roll-up job and runs it every 10 minutes (pg-boss: one run at a time across processes). */
export function scheduleMetricsRollup(boss: PgBoss, repo: Pick<MetricRepo, 'rollUp' | 'deleteOlderThan'>) {
  return schedulePeriodic(boss, METRICS_ROLLUP_QUEUE, '*/10 * * * *', () => rollUpMetrics(repo));
}
