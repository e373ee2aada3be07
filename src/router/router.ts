import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Server, Socket } from 'node:net';
import { DEFAULT_TIMEOUT_SECONDS, serverTimeouts } from '../lib/http-timeouts.js';
import type { RouterState } from './exchange.js';
import { createUpstreamPools } from './forward.js';
import { handleRequest } from './handle-request.js';
import { handleUpgrade } from './handle-upgrade.js';
import type { Router, RouterOptions } from './types.js';

const silentLog = { warn() {}, error() {} };

/**
 * The app router: HTTP (and HTTPS, unless nginx is in front) listeners whose requests and WebSocket upgrades go to the
 * app their host names (handle-request.ts, handle-upgrade.ts). `port: 0` picks a free port.
 */
export async function startRouter(options: RouterOptions): Promise<Router> {
  const timeouts = options.timeouts ?? {
    headersTimeoutMs: DEFAULT_TIMEOUT_SECONDS.headers * 1000,
    requestTimeoutMs: DEFAULT_TIMEOUT_SECONDS.request * 1000,
    keepAliveTimeoutMs: DEFAULT_TIMEOUT_SECONDS.keepAlive * 1000,
    upstreamTimeoutMs: DEFAULT_TIMEOUT_SECONDS.upstream * 1000,
  };
  const pools = createUpstreamPools(timeouts.upstreamTimeoutMs);
  let httpsPort = 0; // known once the HTTPS listener listens, before the HTTP one (whose redirects name it)
  const state: RouterState = {
    options,
    log: options.log ?? silentLog,
    pools,
    upstreamTimeoutMs: timeouts.upstreamTimeoutMs,
    httpsPort: () => httpsPort,
    roundRobinTurns: new Map(),
    upgradeStatuses: new WeakMap(),
  };
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => handleRequest(state, req, res);
  const openSockets = new Set<Socket>();

  function serve(server: http.Server, port: number): Promise<number> {
    // Node types the socket as a Duplex; for a TCP server it is always a net.Socket.
    server.on('upgrade', (req, socket, head) => handleUpgrade(state, req, socket as Socket, head));
    server.on('connection', (socket: Socket) => {
      openSockets.add(socket);
      socket.once('close', () => openSockets.delete(socket));
    });
    return listen(server, port, options.host);
  }
  const servers: Server[] = [http.createServer(serverTimeouts(timeouts), onRequest)];
  const ownTls = options.https && !options.behindProxy;
  if (options.https && ownTls) {
    const { certificates } = options.https;
    // HTTP/2 by ALPN, HTTP/1.1 for the rest (WebSockets included); both reach the same handler.
    const secure = http2.createSecureServer({
      allowHTTP1: true,
      ...certificates.fallback,
      SNICallback: (name, done) => certificates.sniCallback(name, done),
    });
    secure.on('request', (req, res) =>
      onRequest(req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse),
    );
    Object.assign(secure, serverTimeouts(timeouts)); // what http.Server takes as options, for HTTP/1.1 over TLS
    secure.setTimeout(timeouts.keepAliveTimeoutMs * 4); // an HTTP/2 session idle that long is closed
    servers.push(secure as unknown as Server);
  }
  // HTTPS first: the HTTP listener's redirects name its port.
  httpsPort = ownTls ? await serve(servers[1] as http.Server, options.https!.port) : (options.https?.redirectPort ?? 0);
  const port = await serve(servers[0] as http.Server, options.port);

  return {
    port,
    ...(ownTls ? { httpsPort } : {}),
    close: async () => {
      const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
      for (const socket of openSockets) socket.destroy();
      await pools.close();
      await Promise.all(closed);
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
