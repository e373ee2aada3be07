import path from 'node:path';
import { createPostgresCredentials } from '../../core/datastores/credentials.js';
import { createDatastores } from '../../core/datastores/datastores.js';
import { createDatastoreExports } from '../../core/datastores/exports.js';
import { createPostgresRecovery } from '../../core/datastores/recovery.js';
import { createEnvGroups } from '../../core/env-groups.js';
import { machineStatus } from '../../core/machine-status.js';
import { createProjects } from '../../core/projects.js';
import { createRegistryCredentials } from '../../core/registry-credentials.js';
import { createSecretFiles } from '../../core/secret-files.js';
import { createEnvVars } from '../../core/services/env-vars.js';
import { createUsage } from '../../observability/usage/index.js';
import { chooseProvisioners } from '../../provisioners/choose.js';
import type { Cleanup } from '../cleanup.js';
import { logMachineReport } from '../startup-summary.js';
import { wireBilling } from '../wire-billing.js';
import { wireLogStreams } from '../wire-log-streams.js';
import { wireMetricsStreams } from '../wire-metrics-streams.js';
import type { Foundation } from './foundation.js';
import type { Shared } from './shared.js';

/**
 * What a workspace holds besides its services: projects and environments, datastores, env vars and groups, and what
 * it uses and pays for. Logs the machine report here, unless the caller prints a start-up summary instead.
 */
export function wireTenancy(p: Foundation & Shared, cleanup: Cleanup, startupSummary: boolean) {
  const { config, repos, transact, box, runtime, events, log } = p;
  const projects = createProjects({ repos, transact });
  const { assertEnvironment } = projects;
  // Datastore servers run as the apps' unprivileged user (initdb refuses root), each in a network namespace of its own
  // on its workspace's private network where the runtime makes them.
  const runAs = runtime.capabilities.runAsUser;
  const network =
    runtime.capabilities.network === 'namespaces'
      ? { attach: runtime.attachServer.bind(runtime), release: runtime.release.bind(runtime) }
      : undefined;
  const datastores = createDatastores({
    assertMayAddPaid: (workspaceId, kind, plan) => billing.assertMayAddPaid(workspaceId, kind, plan),
    repo: repos.datastores,
    box,
    transact,
    events,
    checkMs: config.datastoreCheckMs,
    log,
    assertEnvironment,
    sweepServers: (keep) => runtime.sweepServers(keep),
    referencesTo: async (id) => [
      ...(await repos.envVars.referencing(id)),
      ...(await repos.envGroupVars.referencing(id)),
    ],
    // The usage meter's last pass over a datastore before it goes (the meter is made below; this runs on a delete).
    beforeRemove: async () => void (await usage.meter.flush()),
    provisioners: chooseProvisioners(config, {
      runAs,
      network,
      // Each repository on S3 encrypted with a key of its own, derived from Slipway's secret key.
      backupCipher: (id) => box.tag('postgres-backup-cipher', id),
    }),
  });
  cleanup.push(() => datastores.close());
  const datastoreExports = createDatastoreExports({
    repo: repos.postgresExports,
    datastores,
    dir: path.join(config.dataDir, 'exports'),
    exists: async (id) => (await repos.datastores.get(id)) !== undefined,
    log,
  });
  const postgresCredentials = createPostgresCredentials(datastores);
  const postgresRecovery = createPostgresRecovery({
    datastores,
    all: () => repos.datastores.all(),
    expired: (now) => repos.datastores.deletedUntil(now),
    forget: (id) => repos.datastores.forgetDeleted(id),
    events,
    checkMs: config.backupCheckMs,
    retryMs: config.backupRetryMs,
    log,
  });
  cleanup.push(() => postgresRecovery.stop());
  const machine = () => machineStatus(runtime.capabilities, datastores);
  if (!startupSummary) logMachineReport(log, runtime.capabilities, machine());
  const refs = datastores.refs;
  const envVars = createEnvVars({ repo: repos.envVars, box, refs });
  const secretFiles = createSecretFiles({ repos, transact, box });
  const envGroups = createEnvGroups({ repos, transact, box, assertEnvironment, refs, files: secretFiles.group });
  const registryCredentials = createRegistryCredentials({ repos, box });
  const logStreams = wireLogStreams({ config, repos, box, logs: p.logs, log });
  const metricsStreams = wireMetricsStreams({ config, repos, box, log });
  const usage = createUsage({
    repo: repos.usage,
    intervalMs: config.usageIntervalMs,
    log,
    isAlive: (handle) => runtime.isAlive(handle),
  });
  cleanup.push(() => usage.meter.stop());
  const { billing, meter: billingMeter } = wireBilling({
    config,
    catalog: p.catalog,
    usage: usage.reports,
    repos,
    transact,
    log,
  });
  cleanup.push(async () => billingMeter?.stop());
  return {
    projects,
    datastores,
    datastoreExports,
    postgresCredentials,
    postgresRecovery,
    machine,
    envVars,
    envGroups,
    secretFiles,
    registryCredentials,
    logStreams,
    metricsStreams,
    usage,
    billing,
    billingMeter,
  };
}
export type Tenancy = ReturnType<typeof wireTenancy>;
