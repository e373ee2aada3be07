import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Config } from './config.js';
import { createAccess } from '../core/access.js';
import { createAuditLog } from '../core/audit.js';
import { loadCatalog } from '../core/billing/catalog.js';
import { createPrincipalCache, PRINCIPAL_CHANNEL } from '../core/principal-cache.js';
import { createReadCache } from '../core/read-cache.js';
import { createIdempotencyStore } from '../core/idempotency.js';
import { createWorkspaces } from '../core/workspaces.js';
import { buildApp, listen, type LogOptions } from '../http/app.js';
import { DOCS_PATH } from '../http/plugins/openapi.js';
import { machineStatus } from '../core/machine-status.js';
import { createGuard } from '../http/guard.js';
import { scheduleMaintenance } from '../jobs/maintenance.js';
import { scheduleMetricsRollup } from '../jobs/metrics-rollup.js';
import { startQueue, type Queue } from '../jobs/queue.js';
import { lockDataDir } from '../lib/data-dir-lock.js';
import { createSecretBox, loadSecretKey } from '../lib/secret-box.js';
import { openStore, TABLES_CHANNEL, type Store } from '../store/db.js';
import { createBuildCache } from '../core/deploys/build-cache.js';
import { allowedGitProtocols } from '../core/deploys/commands.js';
import { createGit } from '../core/deploys/git.js';
import { createDeploys } from '../core/deploys/deploys.js';
import { createDeployEngine } from '../core/deploys/engine.js';
import { createLifecycle } from '../core/deploys/lifecycle.js';
import type { AppUrls } from '../core/deploys/env.js';
import { createLayout } from '../core/deploys/layout.js';
import { createRouteTable } from '../router/route-table.js';
import { createSourceLinker, createSourceStore, removePartialUploads } from '../core/deploys/sources.js';
import { buildLimits } from '../core/services/details.js';
import { createDatastores } from '../core/datastores/datastores.js';
import { createEnvGroups } from '../core/env-groups.js';
import { createEvents } from '../core/events.js';
import { wireBilling } from './wire-billing.js';
import { wireBlueprints } from './wire-blueprints.js';
import { wireAuth } from './wire-auth.js';
import { wireDomains } from './wire-domains.js';
import { wireRouter } from './wire-router.js';
import { wireDeployTriggers, wireGitHub } from './wire-github.js';
import { wireWebhooks } from './wire-webhooks.js';
import { createProjects } from '../core/projects.js';
import { createEnvVars } from '../core/services/env-vars.js';
import { createEnvView } from '../core/services/env-view.js';
import { checkRepo, createServices } from '../core/services/services.js';
import { chooseProvisioners } from '../provisioners/choose.js';
import { scheduleLogRetention } from '../jobs/log-retention.js';
import { createLogs } from '../observability/logs/index.js';
import { listenChannel } from '../store/notify.js';
import { LOG_CHANNEL } from '../store/repos/logs.js';
import { createMetrics } from '../observability/metrics/index.js';
import { createUsage } from '../observability/usage/index.js';
import { createDiskStatus } from '../observability/usage/disk-status.js';
import { observeDeploy } from '../observability/prometheus.js';
import { createLocalRuntime } from '../runtime/local/index.js';
import { createRepos, inTransaction } from '../store/repos/index.js';
import { logMachineReport, type StartupFacts } from './startup-summary.js';

export interface Slipway {
  app: FastifyInstance;
  url: string;
  /** Where apps answer: `http://<slug>.<apps domain>:<port>`. */
  routerPort: number;
  /** The router's HTTPS listener (undefined: SLIPWAY_ROUTER_HTTPS_PORT=off). */
  routerHttpsPort: number | undefined;
  routerUrl: string;
  store: Store;
  queue: Queue;
  /** Stops taking requests, lets in-flight ones finish, then closes the queue and the store. */
  close(): Promise<void>;
  /** What the start-up summary or the `slipway is up` line says (main.ts). */
  startupFacts(): StartupFacts;
}

/**
 * `startupSummary`: the caller prints a summary of the start (main.ts, in a terminal), so the capability report and
 * Fastify's "Server listening" line are not logged.
 */
export type StartOptions = LogOptions & { startupSummary?: boolean };

const httpUrl = (host: string, port: number, scheme = 'http') =>
  `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** The composition root: config -> store -> queue -> core -> http (docs/architecture.md, "Layers"). */
export async function startSlipway(config: Config, options: StartOptions = {}): Promise<Slipway> {
  const unlock = lockDataDir(config.dataDir);
  const cleanup: Array<() => Promise<void> | void> = [unlock];
  const closeAll = async () => {
    for (const step of cleanup.reverse()) await step();
  };
  try {
    const secretBox = createSecretBox(loadSecretKey(config.secretKey, config.dataDir));
    // A bad price catalog stops the start with what is wrong in it, before anything else is opened.
    const catalog = loadCatalog(config.priceCatalogPath);
    // The runtime and the deploy engine log as the system, outside any request.
    const systemLog =
      options.log === false
        ? pino({ enabled: false })
        : pino(
            { level: options.log?.level ?? config.logLevel, base: { component: 'system' } },
            options.log?.stream ?? process.stdout,
          );
    // The runtime's probes (bwrap, cgroups, a network namespace) mostly wait on child processes: they run while
    // the store opens. A failed start still waits for them, so none is left half-done.
    const runtimeReady = createLocalRuntime({
      dataDir: config.dataDir,
      network: config.network,
      networkCidr: config.networkCidr,
      egressAllow: config.egressAllow,
      limits: { pids: config.pidsLimit, diskMb: config.diskLimitMb },
      sandbox: config.sandbox,
      corepack: { registry: config.npmRegistry, integrityKeys: config.corepackIntegrityKeys },
      nodeCacheDir: config.nodeCacheDir,
      nodeReleasesMax: config.nodeReleasesMax,
      log: systemLog,
    });
    const probed = runtimeReady.then(
      () => undefined,
      () => undefined,
    );
    cleanup.push(() => probed);
    const store = await openStore(config);
    cleanup.push(() => store.close());
    const repos = createRepos(store.db);
    const transact = <T>(work: Parameters<typeof inTransaction<T>>[1]) => inTransaction(store.db, work);

    let app: FastifyInstance | undefined;
    const queue = await startQueue(store.executeSql, (err) => app?.log.error({ err }, 'job queue error'));
    cleanup.push(() => queue.stop());
    const runtime = await runtimeReady;
    cleanup.push(() => runtime.close?.());
    const routeTable = createRouteTable(config.appsDomain);
    const lifecycle = createLifecycle();
    let routerPort = config.routerPort;
    const urls: AppUrls = {
      externalHostname: (slug) => `${slug}.${config.appsDomain}`,
      externalUrl: (slug) => `http://${slug}.${config.appsDomain}:${routerPort}`,
      dashboardUrl: (id) => `${config.publicUrl}/services/${id}`,
    };
    // Recording an event queues its webhook deliveries (the outbox) and wakes the dispatcher, started below.
    const hooks = wireWebhooks({ config, repos, box: secretBox });
    const events = createEvents(repos.events, hooks.poke);
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
        queryBudget: { ms: config.logQueryMs, bytes: config.logQueryBytes },
        rateLines: config.logRateLines,
        burstLines: config.logBurstLines,
        requestRateLines: config.requestLogRateLines,
        requestBurstLines: config.requestLogBurstLines,
      },
      onLinesDropped: ({ workspaceId, serviceId, instanceId, deployId, ...counts }) =>
        events.record({
          workspaceId,
          serviceId,
          deployId: deployId ?? undefined,
          type: 'log_lines_dropped',
          details: { serviceId, instanceId, ...counts },
        }),
    });
    const archive = { maxFiles: config.archiveMaxFiles, maxBytes: config.archiveMaxBytes };
    const gitProtocols = allowedGitProtocols(config.gitAllowLocal);
    const git = createGit({
      runtime,
      settings: {
        protocols: gitProtocols,
        stallMs: config.builds.gitTimeoutMs,
        cloneTimeoutMs: config.buildTimeoutSeconds * 1000,
        pollTimeoutMs: config.builds.gitTimeoutMs,
      },
    });
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
      box: secretBox,
      transact,
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
    const machine = () => machineStatus(runtime.capabilities, datastores);
    if (!options.startupSummary) logMachineReport(systemLog, runtime.capabilities, machine());
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
    const { billing, meter: billingMeter } = wireBilling({
      config,
      catalog,
      usage: usage.reports,
      repos,
      transact,
      log: systemLog,
    });
    cleanup.push(async () => billingMeter?.stop());
    const code = wireGitHub({ config, repos, box: secretBox, log: systemLog });
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
        serviceDiskMb: config.serviceDiskMb,
        crashCheckMs: config.crashCheckMs,
        crashBackoffMs: config.crashBackoffMs,
        archive,
        buildDiskMb: config.builds.diskMb,
        buildQueue: config.builds,
        artifactMaxMb: config.builds.artifactMaxMb,
        buildPlans: {
          starter: buildLimits(config.buildPlans.starter),
          performance: buildLimits(config.buildPlans.performance),
        },
      },
      buildCache: createBuildCache({ layout, maxBytes: config.buildCacheMb * 1024 * 1024, log: systemLog }),
      log: systemLog,
      buildLog: logs.buildLog,
      onDeployEnded: (status, deploy) => {
        observeDeploy(status, deploy.startedAt ?? deploy.createdAt);
        code.statuses.ended(status, deploy);
      },
      git,
      gitToken: (service) => code.github.tokenFor(service),
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
    const router = await wireRouter({
      config,
      repos,
      routeTable,
      runtime,
      onRequest: (record) => {
        metrics.traffic.record(record.serviceId, record.bytesOut);
        usage.meter.traffic.record(record.serviceId, record.bytesOut);
        logs.onRequest(record);
      },
      log: systemLog,
    });
    routerPort = router.port;
    const routerHttpsUrl = router.httpsPort ? httpUrl(config.routerHost, router.httpsPort, 'https') : undefined;
    // The stack runs backwards: the router stops first, so its last read of the access log still reaches the store.
    cleanup.push(
      () => logs.close(),
      () => router.close(),
    );

    const principals = createPrincipalCache({ ttlMs: config.principalCacheMs, transact });
    // Several processes on one Postgres: a sign-out, revocation or membership change made by another
    // process drops this one's cached entry too. (One process drops it directly.)
    if (config.databaseUrl && config.principalCacheMs > 0)
      cleanup.push(await listenChannel(config.databaseUrl, PRINCIPAL_CHANNEL, principals.onNotify, systemLog));
    const access = createAccess(repos.workspaces, principals);
    const readCache = createReadCache({ ttlMs: config.readCacheMs });
    store.onTableChange(readCache.onNotify);
    // Writes by other processes, heard even while this one's pool holds no connection (src/store/db.ts).
    if (config.databaseUrl && config.readCacheMs > 0)
      cleanup.push(await listenChannel(config.databaseUrl, TABLES_CHANNEL, readCache.onNotify, systemLog));
    const audit = createAuditLog(repos.audit, readCache);
    const services = createServices({
      repos,
      transact,
      envVars,
      events,
      engine,
      lifecycle,
      assertEnvironment,
      gitProtocols,
      assertMayAddPaid: billing.assertMayAddPaid,
      cache: readCache,
    });
    const deploys = createDeploys({
      repo: repos.deploys,
      engine,
      saveUpload: createSourceStore({
        repo: repos.deploys,
        layout,
        maxUploadBytes: config.maxUploadBytes,
        archive,
      }),
      linkSource: createSourceLinker({ repo: repos.deploys, layout }),
      cache: readCache,
    });
    const { deployHooks, gitPoller } = wireDeployTriggers({
      config,
      repos,
      engine,
      git,
      pushed: (service) => code.github.pushes(service),
      log: systemLog,
    });
    gitPoller.start(config.gitPollIntervalMs);
    cleanup.push(() => gitPoller.stop());
    const certificates = router.certificates;
    const custom = await wireDomains({
      config,
      repos,
      routeTable,
      events,
      box: secretBox,
      tls: certificates,
      log: systemLog,
    });
    cleanup.push(() => custom.stop());
    const blueprints = wireBlueprints({
      config,
      repos,
      services,
      envVars,
      envGroups,
      datastores,
      projects,
      deploys,
      engine,
      events,
      audit,
      log: systemLog,
      archive,
      git,
      runtime,
      checkRepo: (repo) => checkRepo(repo, gitProtocols),
      gitToken: (owner) => code.github.tokenFor(owner),
      domains: custom.domains,
    });
    await blueprints.recover(store.kind === 'pglite');
    cleanup.push(() => blueprints.close());
    const { auth, devices, team, oauth, apiKeys } = wireAuth({
      config,
      repos,
      transact,
      principals,
      box: secretBox,
      log: systemLog,
    });
    app = await buildApp(
      {
        config,
        access,
        guard: createGuard(access),
        auth,
        devices,
        oauth,
        apiKeys,
        team,
        audit,
        workspaces: createWorkspaces(repos),
        idempotency: createIdempotencyStore({ repo: repos.idempotency, box: secretBox }),
        events,
        services,
        envVars,
        envView: createEnvView({ deploys: repos.deploys, urls, layersOf: envGroups.layersOf }),
        envGroups,
        webhooks: hooks.webhooks,
        projects,
        datastores,
        engine,
        deploys,
        deployHooks,
        github: code.github,
        githubWebhook: code.webhook({ engine, events, blueprints, services, envVars }),
        domains: custom.domains,
        urls,
        health: {
          store: () => store.ping(),
          queue: () => queue.ping(),
          storeKind: store.kind,
          runtime: runtime.capabilities,
          router: router.status,
          disk: createDiskStatus(repos.usage, config.serviceDiskMb * 1024 * 1024),
        },
        logs,
        metrics: metrics.queries,
        prometheus: metrics.prometheus,
        usage: usage.reports,
        billing,
        blueprints,
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
    await router.start(); // nginx: the re-adopted instances are in the table now
    await datastores.start();
    await usage.meter.start();
    billingMeter?.start();
    cleanup.push(await hooks.start({ events, audit, log: systemLog, soleProcess: store.kind === 'pglite' }));
    await listen(app, { host: config.host, port: config.port }, !!options.startupSummary);
    const address = app.server.address();
    const url = httpUrl(config.host, typeof address === 'object' && address ? address.port : config.port);
    const routerUrl = httpUrl(config.routerHost, routerPort);
    return {
      app,
      routerPort,
      routerHttpsPort: router.httpsPort,
      routerUrl,
      url,
      store,
      queue,
      close: closeAll,
      startupFacts: () => ({
        apiUrl: url,
        publicUrl: config.publicUrl,
        docsUrl: `${url}${DOCS_PATH}`,
        routerUrl,
        routerHttpsUrl,
        appsDomain: config.appsDomain,
        routerPort,
        routerKind: router.status().kind,
        // The process that serves the apps: nginx's master when nginx is the data plane, else the Node router's.
        ...((router.status().nginx ?? router.status().process)
          ? { routerProcess: router.status().nginx ?? router.status().process }
          : {}),
        dataDir: config.dataDir,
        storeKind: store.kind,
        runAs: runtime.capabilities.runAsUser?.name,
        machine: machine(),
      }),
    };
  } catch (err) {
    await closeAll().catch(() => undefined);
    throw err;
  }
}
