import { createMetricsStreamExporter } from '../core/metrics-streams/exporter.js';
import { createMetricsStreamSettings } from '../core/metrics-streams/settings.js';
import { createOtlpSender } from '../integrations/otlp-metrics.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { Config } from '../model/settings.js';
import type { Repos } from '../store/repos/index.js';

/** Metrics streams: the API's settings, and the exporter that sends them (started by startBackground). */
export function wireMetricsStreams(p: { config: Config; repos: Repos; box: SecretBox; log: Logger }) {
  const { config, repos, box, log } = p;
  const s = config.metricsStreams;
  const settings = createMetricsStreamSettings({ repo: repos.metricsStreams, box, allowPrivate: s.allowPrivate });
  const exporter = createMetricsStreamExporter({
    repos,
    points: { metrics: repos.metrics, http: repos.httpMetrics, sampleSeconds: config.metricsIntervalMs / 1000 },
    box,
    connect: ({ url, token }) => createOtlpSender({ url, token, allowPrivate: s.allowPrivate, timeoutMs: s.timeoutMs }),
    intervalMs: s.intervalMs,
    log,
  });
  return { settings, exporter };
}
export type MetricsStreams = ReturnType<typeof wireMetricsStreams>;
