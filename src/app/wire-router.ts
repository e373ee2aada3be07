import type { RouterStatus } from '../model/settings.js';

import type { Config } from './config.js';
import type { RouteTable } from '../router/route-table.js';
import type { Logger } from '../lib/logger.js';
import { startRouterProcess } from '../router/daemon/index.js';
import { createNginxPlane, nginxPorts } from '../router/nginx/index.js';
import { nginxBinary, nginxLuaModules } from '../router/nginx/process.js';
import type { Runtime } from '../runtime/types.js';
import { startRouter } from '../router/router.js';
import type { CertificateStore } from '../router/tls.js';
import type { RequestRecord, RouterOptions } from '../router/types.js';
import type { Repos } from '../store/repos/index.js';
import { routerTls } from './wire-domains.js';

const NGINX_USER = 'www-data';
const NGINX_APT = 'Debian: apt-get install nginx-light libnginx-mod-http-lua';

interface RouterDeps {
  config: Config;
  repos: Pick<Repos, 'certificates'>;
  routeTable: RouteTable;
  runtime: Pick<Runtime, 'daemonUser'>;
  onRequest(record: RequestRecord): void;
  log: Logger;
}
type Tls = Awaited<ReturnType<typeof routerTls>>;
type NodeRouterOptions = Pick<RouterOptions, 'host' | 'port' | 'https' | 'behindProxy' | 'acmeAnswer'>;

/**
 * The data plane (SLIPWAY_ROUTER): the Node router alone, or nginx in front of it. Both read the one route table; with
 * nginx, the Node router listens on loopback only and answers what nginx hands it (static sites, pages, redirects,
 * ACME challenges). `start()` runs once the engine has put the live instances back in the table.
 */
export async function wireRouter(deps: RouterDeps) {
  const { config, log } = deps;
  const tls = await routerTls(config, deps.repos);
  const certificates = tls.https?.certificates;
  const binary = config.router.kind === 'node' ? undefined : nginxBinary();
  const modules = binary ? nginxLuaModules() : undefined;
  if (config.router.kind === 'nginx' && !(binary && modules))
    throw new Error(
      `SLIPWAY_ROUTER=nginx, but ${binary ? "nginx's Lua module" : 'nginx'} is not installed (${NGINX_APT})`,
    );
  if (binary && modules) return startNginxPlane(deps, tls, { binary, modules });
  if (config.router.kind === 'auto')
    log.info({}, `router: nginx or its Lua module is not installed, the Node router serves (${NGINX_APT})`);
  const router = await startNodeRouter(deps, certificates, {
    host: config.routerHost,
    port: config.routerPort,
    ...tls,
  });
  return {
    port: router.port,
    httpsPort: router.httpsPort,
    certificates,
    start: () => router.start(),
    status: (): RouterStatus => withProcess({ kind: 'node' }, router.status()),
    close: () => router.close(),
  };
}

/** The Node router: in the API process (SLIPWAY_ROUTER_PROCESS=api), or in its own, which outlives it. */
function startNodeRouter(deps: RouterDeps, certificates: CertificateStore | undefined, options: NodeRouterOptions) {
  return deps.config.router.process === 'api' ? inApiProcess(deps, options) : ownProcess(deps, certificates, options);
}

async function inApiProcess({ config, routeTable, onRequest, log }: RouterDeps, options: NodeRouterOptions) {
  const router = await startRouter({ ...options, resolve: routeTable.resolve, timeouts: config, onRequest, log });
  return { ...router, start: async () => undefined, status: () => undefined };
}

async function ownProcess(
  { config, routeTable, onRequest, log }: RouterDeps,
  certificates: CertificateStore | undefined,
  { https, ...options }: NodeRouterOptions,
) {
  const daemon = await startRouterProcess({
    dataDir: config.dataDir,
    settings: {
      appsDomain: config.appsDomain,
      host: options.host,
      port: options.port,
      timeouts: {
        headersTimeoutMs: config.headersTimeoutMs,
        requestTimeoutMs: config.requestTimeoutMs,
        keepAliveTimeoutMs: config.keepAliveTimeoutMs,
        upstreamTimeoutMs: config.upstreamTimeoutMs,
      },
      behindProxy: options.behindProxy === true,
      ...(https
        ? {
            https: {
              port: https.port,
              ...(https.redirectPort ? { redirectPort: https.redirectPort } : {}),
              fallback: https.certificates.fallback,
            },
          }
        : {}),
      acme: options.acmeAnswer !== undefined,
      // Behind nginx it serves static sites and redirects only: nginx carries the apps' traffic.
      workers: options.behindProxy ? 1 : config.router.nodeWorkers,
    },
    table: routeTable,
    ...(certificates ? { certificates } : {}),
    ...(options.acmeAnswer ? { acmeAnswer: options.acmeAnswer } : {}),
    onRequest,
    log,
  });
  routeTable.attach(daemon);
  return {
    port: daemon.ports.http,
    httpsPort: options.behindProxy ? undefined : daemon.ports.https,
    start: () => daemon.start(),
    status: () => ({ pid: daemon.pid, adopted: daemon.adopted, workers: daemon.workers }),
    close: () => daemon.close(),
  };
}

/** nginx in front, carrying the apps' traffic, and the Node router behind it on loopback for the rest. */
async function startNginxPlane(
  deps: RouterDeps,
  tls: Tls,
  { binary, modules }: { binary: string; modules: NonNullable<ReturnType<typeof nginxLuaModules>> },
) {
  const { config, routeTable, runtime, onRequest, log } = deps;
  const certificates = tls.https?.certificates;
  let lastRejected: RouterStatus['lastRejected'];
  const startNginx = async () => {
    const ports = await nginxPorts(config.dataDir, {
      http: config.routerPort,
      ...(config.https.port !== undefined ? { https: config.https.port } : {}),
    });
    const fallback = await startNodeRouter(deps, certificates, {
      host: '127.0.0.1',
      port: 0,
      behindProxy: true,
      ...(tls.https ? { https: { ...tls.https, redirectPort: tls.https.redirectPort ?? ports.https } } : {}),
      ...(tls.acmeAnswer ? { acmeAnswer: tls.acmeAnswer } : {}),
    });
    const plane = await createNginxPlane({
      dataDir: config.dataDir,
      binary,
      ports,
      settings: {
        host: config.routerHost,
        ...(config.https.redirectPort ? { redirectPort: config.https.redirectPort } : {}),
        fallbackPort: fallback.port,
        workers: config.router.nginxWorkers,
        modules,
        // nginx's default worker user is nobody, which the apps run as: they could signal its workers.
        ...(runtime.daemonUser(NGINX_USER) ? { user: NGINX_USER } : {}),
        timeouts: {
          headersMs: config.headersTimeoutMs,
          requestMs: config.requestTimeoutMs,
          keepAliveMs: config.keepAliveTimeoutMs,
          upstreamMs: config.upstreamTimeoutMs,
        },
      },
      table: routeTable,
      ...(certificates ? { certificates } : {}),
      onRequest,
      onRejected: (reason) => (lastRejected = { at: new Date().toISOString(), reason }),
      log,
    }).catch(async (err: unknown) => {
      await fallback.close();
      throw err;
    });
    return { ports, fallback, plane };
  };
  // A port picked free (SLIPWAY_ROUTER_PORT=0) can be taken before nginx binds it: pick again.
  const anyPort = config.routerPort === 0 || config.https.port === 0;
  let started: Awaited<ReturnType<typeof startNginx>> | undefined;
  for (let attempt = 1; !started; attempt++)
    started = await startNginx().catch((err: Error) => {
      if (anyPort && attempt < 3 && /Address already in use/.test(err.message)) return undefined;
      throw err;
    });
  const { ports, fallback, plane } = started;
  routeTable.attach(plane);
  return {
    port: ports.http,
    httpsPort: ports.https,
    certificates,
    start: async () => {
      await fallback.start();
      await plane.start();
    },
    status: (): RouterStatus =>
      withProcess(
        {
          kind: 'nginx',
          ...(plane.pid ? { nginx: { pid: plane.pid, adopted: plane.adopted } } : {}),
          ...(lastRejected ? { lastRejected } : {}),
        },
        fallback.status(),
      ),
    close: async () => {
      plane.close();
      await fallback.close();
    },
  };
}

const withProcess = (status: RouterStatus, process: RouterStatus['process']): RouterStatus =>
  process ? { ...status, process } : status;
