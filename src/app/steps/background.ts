import { removePartialUploads } from '../../core/deploys/sources.js';
import { scheduleLogRetention } from '../../jobs/log-retention.js';
import { scheduleMaintenance } from '../../jobs/maintenance.js';
import { scheduleMetricsRollup } from '../../jobs/metrics-rollup.js';
import { holdLock } from '../../store/leader.js';
import { listenChannel } from '../../store/notify.js';
import { LOG_CHANNEL } from '../../store/repos/logs.js';
import type { Cleanup } from '../cleanup.js';
import { scheduleStateBackups } from '../state-backup.js';
import type { Access } from './access.js';
import type { Deploying } from './deploying.js';
import type { Foundation } from './foundation.js';
import type { Shared } from './shared.js';
import type { Tenancy } from './tenancy.js';
import type { Traffic } from './traffic.js';

/**
 * The work that runs without a request, in this order: the queue's jobs, log collection, metrics, the usage meter's
 * close of instances that died while Slipway was down, the engine's recovery, the router, datastores, the meters,
 * and last the webhook and notification dispatchers.
 */
export async function startBackground(
  p: Foundation & Shared & Tenancy & Deploying & Traffic & Access,
  cleanup: Cleanup,
) {
  const { config, repos, store, queue, logs, metrics, usage, log } = p;
  await scheduleMaintenance(queue.boss, {
    ...repos,
    analyze: store.analyze,
    pruneExports: (now) => p.datastoreExports.prune(now),
  });
  await scheduleLogRetention(queue.boss, repos.logs, {
    retentionDays: config.logRetentionDays,
    maxBytesPerService: config.logMaxBytesPerService,
  });
  await scheduleMetricsRollup(queue.boss, repos.metrics);
  await logs.start();
  // Several processes on one Postgres: lines collected by another process reach this one's subscribers.
  if (config.databaseUrl)
    cleanup.push(
      await listenChannel(
        config.databaseUrl,
        LOG_CHANNEL,
        (maxId) => logs.hub.poke(maxId ? Number(maxId) : undefined),
        log,
      ),
    );
  metrics.start();
  // Instances that died while Slipway was down are closed at their last metered moment before
  // recovery stamps them stopped; then the meter bills everything up to now, and every interval.
  await usage.meter.closeDead();
  const partialUploads = removePartialUploads(p.layout);
  if (partialUploads > 0) log.info({ removed: partialUploads }, 'removed partial uploads a crash left behind');
  await p.engine.recover();
  await p.router.start(); // nginx: the re-adopted instances are in the table now
  await p.datastores.start();
  p.postgresRecovery.start(); // base backups of archiving Postgres datastores
  p.disks.start(); // services' disks' daily snapshots
  if (config.stateBackups) {
    const stateBackups = scheduleStateBackups({ store, dataDir: config.dataDir, settings: config.stateBackups, log });
    stateBackups.start();
    cleanup.push(() => stateBackups.stop());
  }
  await usage.meter.start();
  p.billingMeter?.start();
  // Log streams forward from one process: on a shared Postgres, the one holding their lock.
  const streams = p.logStreams.forwarder;
  if (config.databaseUrl)
    cleanup.push(
      await holdLock(config.databaseUrl, 'slipway.log-streams', { onLead: streams.start, onLose: streams.stop }, log),
    );
  else {
    await streams.start();
    cleanup.push(() => streams.stop());
  }
  // Metrics streams too: one exporter, so that an endpoint gets each window once.
  const metricsStreams = p.metricsStreams.exporter;
  if (config.databaseUrl)
    cleanup.push(
      await holdLock(
        config.databaseUrl,
        'slipway.metrics-streams',
        { onLead: metricsStreams.start, onLose: metricsStreams.stop },
        log,
      ),
    );
  else {
    await metricsStreams.start();
    cleanup.push(() => metricsStreams.stop());
  }
  cleanup.push(await p.hooks.start({ events: p.events, audit: p.audit, log, soleProcess: store.kind === 'pglite' }));
  cleanup.push(await p.notifications.start({ log, soleProcess: store.kind === 'pglite' }));
}
