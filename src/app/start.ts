import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { listen, type LogOptions } from '../http/app.js';
import { DOCS_PATH } from '../http/plugins/openapi.js';
import type { Queue } from '../jobs/queue.js';
import { lockDataDir } from '../lib/data-dir-lock.js';
import type { Store } from '../store/db.js';
import { closeAll, type Cleanup } from './cleanup.js';
import type { StartupFacts } from './startup-summary.js';
import { wireAccess } from './steps/access.js';
import { buildApi } from './steps/api.js';
import { startBackground } from './steps/background.js';
import { wireDeploying } from './steps/deploying.js';
import { openFoundation, type Foundation } from './steps/foundation.js';
import { wireResources } from './steps/resources.js';
import { wireShared } from './steps/shared.js';
import { wireTenancy, type Tenancy } from './steps/tenancy.js';
import { startTraffic, type Traffic } from './steps/traffic.js';

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

/**
 * The composition root: config -> store -> queue -> core -> http (docs/architecture.md, "Layers", "Start-up"). Each
 * step (app/steps/) builds its parts from those made before it, in this order, and pushes what undoes them onto one
 * cleanup stack, which `close` (or a failed start) runs backwards. Each const holds every part made so far.
 */
export async function startSlipway(config: Config, options: StartOptions = {}): Promise<Slipway> {
  const cleanup: Cleanup = [lockDataDir(config.dataDir)];
  let app: FastifyInstance | undefined;
  try {
    const base = await openFoundation(config, options, cleanup, (err) => app?.log.error({ err }, 'job queue error'));
    const shared = { ...base, ...wireShared(base) };
    const tenancy = { ...shared, ...wireTenancy(shared, cleanup, !!options.startupSummary) };
    const deploying = { ...tenancy, ...wireDeploying(tenancy, cleanup) };
    const traffic = { ...deploying, ...(await startTraffic(deploying, cleanup)) };
    const guarded = { ...traffic, ...(await wireAccess(traffic, cleanup)) };
    const parts = { ...guarded, ...(await wireResources(guarded, cleanup)) };
    app = await buildApi(parts, options, cleanup);
    await startBackground(parts, cleanup);
    return await listening(app, parts, cleanup, options);
  } catch (err) {
    await closeAll(cleanup).catch(() => undefined);
    throw err;
  }
}

/** Opens the API's port last, once everything behind it runs; says where Slipway answers. */
async function listening(
  app: FastifyInstance,
  { config, store, queue, runtime, router, machine }: Foundation & Tenancy & Traffic,
  cleanup: Cleanup,
  options: StartOptions,
): Promise<Slipway> {
  await listen(app, { host: config.host, port: config.port }, !!options.startupSummary);
  const address = app.server.address();
  const url = httpUrl(config.host, typeof address === 'object' && address ? address.port : config.port);
  const routerUrl = httpUrl(config.routerHost, router.port);
  const routerHttpsUrl = router.httpsPort ? httpUrl(config.routerHost, router.httpsPort, 'https') : undefined;
  return {
    app,
    routerPort: router.port,
    routerHttpsPort: router.httpsPort,
    routerUrl,
    url,
    store,
    queue,
    close: () => closeAll(cleanup),
    startupFacts: () => ({
      apiUrl: url,
      publicUrl: config.publicUrl,
      docsUrl: `${url}${DOCS_PATH}`,
      routerUrl,
      routerHttpsUrl,
      appsDomain: config.appsDomain,
      routerPort: router.port,
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
}
