import { createMetrics } from '../../observability/metrics/index.js';
import type { Cleanup } from '../cleanup.js';
import { wireRouter } from '../wire-router.js';
import type { Foundation } from './foundation.js';
import type { Shared } from './shared.js';
import type { Tenancy } from './tenancy.js';

/** The router (the data plane) and the metrics its requests feed, with the usage meter and the request logs. */
export async function startTraffic(p: Foundation & Shared & Tenancy, cleanup: Cleanup) {
  const { config, repos, queue, logs, usage, log } = p;
  const metrics = createMetrics({
    repos,
    boss: queue.boss,
    intervalMs: config.metricsIntervalMs,
    serviceDiskBytes: config.serviceDiskMb * 1024 * 1024,
    datastoreProcesses: () => p.datastores.processes(),
    log,
  });
  cleanup.push(() => metrics.stop());
  const router = await wireRouter({
    config,
    repos,
    routeTable: p.routeTable,
    runtime: p.runtime,
    onRequest: (record) => {
      metrics.traffic.record(record.serviceId, record.bytesOut);
      metrics.http.record(record);
      usage.meter.traffic.record(record.serviceId, record.bytesOut);
      logs.onRequest(record);
    },
    log,
  });
  p.routerAddress.port = router.port;
  // The stack runs backwards: the router stops first, so its last read of the access log still reaches the store.
  cleanup.push(
    () => logs.close(),
    () => router.close(),
  );
  return { metrics, router };
}
export type Traffic = Awaited<ReturnType<typeof startTraffic>>;
