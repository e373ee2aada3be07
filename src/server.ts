import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Config } from './config.js';
import { createAccess } from './core/access.js';
import { createApiKeys } from './core/api-keys.js';
import { createAuditLog } from './core/audit.js';
import { createAuth } from './core/auth.js';
import { createPrincipalCache, PRINCIPAL_CHANNEL } from './core/principal-cache.js';
import { createIdempotencyStore } from './core/idempotency.js';
import { createTeam } from './core/team.js';
import { createWorkspaces } from './core/workspaces.js';
import { buildApp, type LogOptions } from './http/app.js';
import { createGuard } from './http/guard.js';
import { scheduleMaintenance } from './jobs/maintenance.js';
import { scheduleMetricsRollup } from './jobs/metrics-rollup.js';
import { startQueue, type Queue } from './jobs/queue.js';
import { lockDataDir } from './lib/data-dir-lock.js';
import { createSecretBox, loadSecretKey } from './lib/secret-box.js';
import { openStore, type Store } from './store/db.js';
import { allowedGitProtocols } from './core/deploys/commands.js';
import { createDeploys } from './core/deploys/deploys.js';
import { createDeployEngine } from './core/deploys/engine.js';
import { createLifecycle } from './core/deploys/lifecycle.js';
import type { AppUrls } from './core/deploys/env.js';
import { createLayout } from './core/deploys/layout.js';
import { createRouteTable } from './core/deploys/route-table.js';
import { createSourceStore, removePartialUploads } from './core/deploys/sources.js';
import { createDatastores } from './core/datastores/datastores.js';
import { createEnvGroups } from './core/env-groups.js';
import { createEvents } from './core/events.js';
import { createProjects } from './core/projects.js';
import { createEnvVars } from './core/services/env-vars.js';
import { createEnvView } from './core/services/env-view.js';
import { createServices } from './core/services/services.js';
import { chooseProvisioners } from './provisioners/choose.js';
import { startRouter } from './router/router.js';
import { scheduleLogRetention } from './jobs/log-retention.js';
import { createLogs } from './observability/logs/index.js';
import { listenChannel } from './store/notify.js';
import { LOG_CHANNEL } from './store/repos/logs.js';
import { createMetrics } from './observability/metrics/index.js';
import { createUsage } from './observability/usage/index.js';
import { observeDeploy } from './observability/prometheus.js';
import { createLocalRuntime } from './runtime/local/index.js';
import { createRepos, inTransaction } from './store/repos/index.js';
import { LOG_QUERY_TIMEOUT_MS } from './store/repos/logs.js';

export interface Slipway {
  app: FastifyInstance;
  url: string;
  /** Where apps answer: `http://<slug>.<apps domain>:<port>`. */
  routerPort: number;
  store: Store;
  queue: Queue;
  /** Stops taking requests, lets in-flight ones finish, then closes the queue and the store. */
  close(): Promise<void>;
}

/** The composition root: config -> store -> queue -> core -> http (docs/architecture.md, "Layers"). */
export async function startSlipway(config: Config, options: LogOptions = {}): Promise<Slipway> {
  const unlock = lockDataDir(config.dataDir);
  const cleanup: Array<() => Promise<void> | void> = [unlock];
  const closeAll = async () => {
    for (const step of cleanup.reverse()) await step();
  };
  try {
    const secretBox = createSecretBox(loadSecretKey(config.secretKey, config.dataDir));
    const store = await openStore(config);
    cleanup.push(() => store.close());
    const repos = createRepos(store.db, {
      logQueryTimeoutMs: store.kind === 'postgres' ? LOG_QUERY_TIMEOUT_MS : undefined,
    });
    const transact = <T>(work: Parameters<typeof inTransaction<T>>[1]) => inTransaction(store.db, work);

    let app: FastifyInstance | undefined;
    const queue = await startQueue(store.executeSql, (err) => app?.log.error({ err }, 'job queue error'));
    cleanup.push(() => queue.stop());

    // The runtime and the deploy engine log as the system, outside any request.
    const systemLog =
      options.log === false
        ? pino({ enabled: false })
        : pino(
            { level: options.log?.level ?? config.logLevel, base: { component: 'system' } },
            options.log?.stream ?? process.stdout,
          );
    const runtime = await createLocalRuntime({
      dataDir: config.dataDir,
      network: config.network,
      networkCidr: config.networkCidr,
      limits: { pids: config.pidsLimit, diskMb: config.diskLimitMb },
      sandbox: config.sandbox,
      log: systemLog,
    });
    const routeTable = createRouteTable(config.appsDomain);
    const lifecycle = createLifecycle();
    let routerPort = config.routerPort;
    const urls: AppUrls = {
      externalHostname: (slug) => `${slug}.${config.appsDomain}`,
      externalUrl: (slug) => `http://${slug}.${config.appsDomain}:${routerPort}`,
      dashboardUrl: (id) => `${config.publicUrl}/services/${id}`,
    };
    const events = createEvents(repos.events);
    const layout = createLayout(config.dataDir);
    const logs = createLogs({
      repo: repos.logs,
      instances: () => repos.logs.tailable(),
      instanceDir: layout.instanceDir,
      shared: store.kind === 'postgres',
      log: systemLog,
      workspaceOf: async (id) => (await repos.services.get(id))?.workspaceId,
      settings: {
        pollMs: config.logPollMs,
        flushMs: 5,
        streamBufferBytes: config.logStreamBufferBytes,
        pingMs: 30_000,
        rateLines: config.logRateLines,
        burstLines: config.logBurstLines,
      },
      onLinesDropped: ({ workspaceId, serviceId, instanceId, deployId, ...counts }) =>
        events.record({
          workspaceId,
          serviceId,
          deployId,
          type: 'log_lines_dropped',
          details: { serviceId, instanceId, ...counts },
        }),
    });
    const archive = { maxFiles: config.archiveMaxFiles, maxBytes: config.archiveMaxBytes };
    const gitProtocols = allowedGitProtocols(config.gitAllowLocal);
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
      repo: repos.datastores,
      box: secretBox,
      events,
      checkMs: config.datastoreCheckMs,
      log: systemLog,
      assertEnvironment,
      sweepServers: (keep) => runtime.sweepServers(keep),
      referencesTo: async (id) => [
        ...(await repos.envVars.referencing(id)),
        ...(await repos.envGroupVars.referencing(id)),
      ],
      // The usage meter's last pass over a datastore before it goes (the meter is made below; this runs on a delete).
      beforeRemove: async () => void (await usage.meter.flush()),
      provisioners: chooseProvisioners(config, { runAs, network }),
    });
    cleanup.push(() => datastores.close());
    for (const [kind, { note }] of Object.entries(datastores.availability()))
      if (note) systemLog.warn({ kind }, `${kind} datastores are off: ${note}`);
    const refs = datastores.refs;
    const envVars = createEnvVars({ repo: repos.envVars, box: secretBox, refs });
    const envGroups = createEnvGroups({ repos, transact, box: secretBox, assertEnvironment, refs });
    const usage = createUsage({
      repo: repos.usage,
      intervalMs: config.usageIntervalMs,
      log: systemLog,
      isAlive: (p) => runtime.isAlive(p),
    });
    cleanup.push(() => usage.meter.stop());
    const engine = createDeployEngine({
      repos,
      transact,
      runtime,
      layout,
      routeTable,
      lifecycle,
      events,
      urls,
      layersOf: envGroups.layersOf,
      limits: {
        buildTimeoutMs: config.buildTimeoutSeconds * 1000,
        healthTimeoutMs: config.healthCheckTimeoutSeconds * 1000,
        keepArtifacts: config.keepArtifacts,
        crashCheckMs: config.crashCheckMs,
        crashBackoffMs: config.crashBackoffMs,
        archive,
        gitProtocols,
      },
      log: systemLog,
      buildLog: logs.buildLog,
      onDeployEnded: (status, deploy) => observeDeploy(status, deploy.startedAt ?? deploy.createdAt),
      onBuildEnded: (service, deployId, startedAt, endedAt) =>
        usage.meter.recordBuild(service, deployId, startedAt, endedAt),
      // A deleted service's instance rows go with it: meter their last stretch first.
      onRemoved: async () => void (await usage.meter.flush()),
      collectOutput: (run) => logs.collectRest(run),
      onInstanceSpawned: () => logs.instanceSpawned(),
    });
    cleanup.push(() => engine.close());
    const metrics = createMetrics({ repos, boss: queue.boss, intervalMs: config.metricsIntervalMs, log: systemLog });
    cleanup.push(() => metrics.stop());
    const router = await startRouter({
      host: config.routerHost,
      port: config.routerPort,
      resolve: routeTable.resolve,
      timeouts: config,
      onRequest: (record) => {
        metrics.traffic.record(record.serviceId, record.bytesOut);
        usage.meter.traffic.record(record.serviceId, record.bytesOut);
        logs.onRequest(record);
      },
    });
    routerPort = router.port;
    cleanup.push(() => router.close());

    const principals = createPrincipalCache({ ttlMs: config.principalCacheMs, transact });
    // Several processes on one Postgres: a sign-out, revocation or membership change made by another
    // process drops this one's cached entry too. (One process drops it directly.)
    if (config.databaseUrl && config.principalCacheMs > 0)
      cleanup.push(await listenChannel(config.databaseUrl, PRINCIPAL_CHANNEL, principals.onNotify, systemLog));
    const access = createAccess(repos.workspaces, principals);
    app = await buildApp(
      {
        config,
        access,
        guard: createGuard(access),
        auth: createAuth({
          ...repos,
          transact,
          principals,
          sessionTtlDays: config.sessionTtlDays,
          operatorToken: config.operatorToken,
          touchIntervalMs: config.apiKeyTouchMs,
          log: systemLog,
        }),
        apiKeys: createApiKeys(repos.apiKeys, principals),
        team: createTeam({ ...repos, principals, inviteTtlDays: config.inviteTtlDays }),
        audit: createAuditLog(repos.audit),
        workspaces: createWorkspaces(repos),
        idempotency: createIdempotencyStore({ repo: repos.idempotency, box: secretBox }),
        events,
        services: createServices({
          repos,
          transact,
          envVars,
          events,
          engine,
          lifecycle,
          assertEnvironment,
          gitProtocols,
        }),
        envVars,
        envView: createEnvView({ deploys: repos.deploys, urls, layersOf: envGroups.layersOf }),
        envGroups,
        projects,
        datastores,
        engine,
        deploys: createDeploys({
          repo: repos.deploys,
          engine,
          saveUpload: createSourceStore({
            repo: repos.deploys,
            layout,
            maxUploadBytes: config.maxUploadBytes,
            archive,
          }),
        }),
        urls,
        health: {
          store: () => store.ping(),
          queue: () => queue.ping(),
          storeKind: store.kind,
          runtime: runtime.capabilities,
        },
        logs,
        metrics: metrics.queries,
        prometheus: metrics.prometheus,
        usage: usage.reports,
      },
      options,
    );
    const server = app;
    cleanup.push(async () => {
      // close() waits for in-flight requests but leaves keep-alive sockets open until they
      // idle out; closing each as soon as it is idle lets shutdown finish promptly.
      const sweep = setInterval(() => server.server.closeIdleConnections(), 50);
      try {
        await server.close();
      } finally {
        clearInterval(sweep);
      }
    });
    await scheduleMaintenance(queue.boss, { ...repos, analyze: store.analyze });
    await scheduleLogRetention(queue.boss, repos.logs, {
      retentionDays: config.logRetentionDays,
      maxBytesPerService: config.logMaxBytesPerService,
    });
    await scheduleMetricsRollup(queue.boss, repos.metrics);
    await logs.start();
    cleanup.push(() => logs.close());
    // Several processes on one Postgres: lines collected by another process reach this one's subscribers.
    if (config.databaseUrl)
      cleanup.push(
        await listenChannel(
          config.databaseUrl,
          LOG_CHANNEL,
          (maxId) => logs.hub.poke(maxId ? Number(maxId) : undefined),
          systemLog,
        ),
      );
    metrics.start();
    // Instances that died while Slipway was down are closed at their last metered moment before
    // recovery stamps them stopped; then the meter bills everything up to now, and every interval.
    await usage.meter.closeDead();
    const partialUploads = removePartialUploads(layout);
    if (partialUploads > 0) systemLog.info({ removed: partialUploads }, 'removed partial uploads a crash left behind');
    await engine.recover();
    await datastores.start();
    await usage.meter.start();
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    return {
      app,
      routerPort,
      url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
      store,
      queue,
      close: closeAll,
    };
  } catch (err) {
    await closeAll().catch(() => undefined);
    throw err;
  }
}
