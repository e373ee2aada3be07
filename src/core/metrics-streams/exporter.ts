import type { OtlpSender } from '../../integrations/otlp-metrics.js';
import { createFairSlots } from '../../lib/fair-slots.js';
import { tickLoop } from '../../lib/tick-loop.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { MetricsStreamRepo, MetricsStreamRow } from '../../store/repos/metrics-streams.js';
import type { ServiceRepo } from '../../store/repos/services.js';
import { pointsOf, type Totals } from './points.js';

/** A stream this process exports: its sender (for its URL and token), its sums, and where its next window starts. */
interface Going {
  settings: string;
  sender: OtlpSender;
  totals: Totals;
  from: Date;
  failing: boolean;
}

/** A workspace's services read per export, at most (a bound on one export's store reads). */
const SERVICES_MAX = 500;

/**
 * Exports every workspace's metrics to its metrics stream (docs/observability.md, "Metrics streams"): every
 * `intervalMs`, each stream gets one OTLP export of its window, all streams at once (their reads two at a time), so a
 * slow or dead endpoint only delays its own (each export has the sender's time limit). A window ends one sampling interval before now, so
 * that samples still being written belong to the next one. An export that fails is not retried: the next one carries
 * the sums on, and gauges are only ever their newest values.
 */
export function createMetricsStreamExporter(deps: {
  repos: { metricsStreams: Pick<MetricsStreamRepo, 'all'>; services: Pick<ServiceRepo, 'list'> };
  points: Parameters<typeof pointsOf>[0];
  box: SecretBox;
  connect(o: { url: string; token?: string }): OtlpSender;
  intervalMs: number;
  log: Pick<Logger, 'info' | 'warn'>;
}) {
  const going = new Map<string, Going>();
  const reads = createFairSlots({ slots: 2, perKey: 1 });
  const settingsOf = (row: MetricsStreamRow) => `${row.url}\n${row.sealedToken ?? ''}`;

  async function exportOne(row: MetricsStreamRow, to: Date) {
    let entry = going.get(row.workspaceId);
    if (entry?.settings !== settingsOf(row)) {
      await entry?.sender.close();
      const token = row.sealedToken ? deps.box.open(row.sealedToken) : undefined;
      const from = new Date(to.getTime() - deps.intervalMs);
      entry = {
        settings: settingsOf(row),
        sender: deps.connect({ url: row.url, token }),
        totals: new Map(),
        from,
        failing: false,
      };
      going.set(row.workspaceId, entry);
    }
    // Reading takes a turn (two workspaces at once, one slot each): the sends wait on the network together, but a
    // round of many workspaces' reads never lands on the store (or PGlite's event loop) all at once.
    const release = await reads.acquire(row.workspaceId);
    let points;
    try {
      const services = await deps.repos.services.list({ workspaceIds: [row.workspaceId], limit: SERVICES_MAX });
      points = await pointsOf(deps.points, services, { from: entry.from, to }, entry.totals);
    } finally {
      release();
    }
    entry.from = to;
    try {
      await entry.sender.send(points);
      if (entry.failing) deps.log.info({ workspaceId: row.workspaceId }, 'metrics stream: exporting again');
      entry.failing = false;
    } catch (err) {
      if (!entry.failing)
        deps.log.warn({ workspaceId: row.workspaceId, err: (err as Error).message }, 'metrics stream: export failed');
      entry.failing = true;
    }
  }

  async function tick() {
    const rows = await deps.repos.metricsStreams.all();
    const wanted = new Set(rows.map((r) => r.workspaceId));
    for (const [workspaceId, entry] of going)
      if (!wanted.has(workspaceId)) {
        going.delete(workspaceId);
        await entry.sender.close();
      }
    const to = new Date(Date.now() - deps.points.sampleSeconds * 1000);
    await Promise.all(
      rows.map((row) =>
        exportOne(row, to).catch((err: Error) =>
          deps.log.warn({ workspaceId: row.workspaceId, err: err.message }, 'metrics stream: reading failed'),
        ),
      ),
    );
  }

  const loop = tickLoop(tick, deps.intervalMs, (err) => deps.log.warn({ err }, 'metrics stream: export round failed'));
  return {
    start: async () => loop.start(),
    async stop() {
      await loop.stop();
      for (const entry of going.values()) await entry.sender.close();
      going.clear();
    },
  };
}
export type MetricsStreamExporter = ReturnType<typeof createMetricsStreamExporter>;
