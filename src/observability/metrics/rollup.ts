import type { MetricRepo } from '../../store/repos/metrics.js';

/**
 * How long each resolution is kept (docs/observability.md, "Metrics"): raw samples for an hour (a day of them
 * made a day's history a scan of 432,000 rows at 50 instances), then 60 s roll-ups until 7 days,
 * then 3600 s roll-ups until 30 days, then nothing.
 */
const METRICS_RETENTION = { rawMs: 3_600_000, minuteMs: 7 * 86_400_000, expireMs: 30 * 86_400_000 };

/** `at` rounded down to a multiple of `seconds`, so a bucket is never split between two runs. */
const alignDown = (at: number, seconds: number) => new Date(Math.floor(at / (seconds * 1000)) * seconds * 1000);

/** The metrics-rollup job's work (scheduled by src/jobs/metrics-rollup.ts). */
export async function rollUpMetrics(repo: Pick<MetricRepo, 'rollUp' | 'deleteOlderThan'>, now = new Date()) {
  const t = now.getTime();
  const toMinutes = await repo.rollUp(0, 60, alignDown(t - METRICS_RETENTION.rawMs, 60));
  const toHours = await repo.rollUp(60, 3600, alignDown(t - METRICS_RETENTION.minuteMs, 3600));
  const expired = await repo.deleteOlderThan(new Date(t - METRICS_RETENTION.expireMs));
  return { rawRolled: toMinutes.rolled, minuteRolled: toHours.rolled, expired };
}
