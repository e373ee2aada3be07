import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import httpProxy from 'http-proxy';
import { DEFAULT_TIMEOUT_SECONDS, serverTimeouts, type ConnectionTimeouts } from '../lib/http-timeouts.js';
import { rawPageResponse, sendPage, type PageKind } from './pages.js';
import { serveStatic } from './static.js';
import type { Logger } from '../lib/logger.js';

export interface Upstream {
  host: string;
  port: number;
  /** The instance listening there (labels its request log entries). */
  instanceId?: string;
}
export type RouteTarget =
  | { kind: 'instances'; serviceId: string; upstreams: Upstream[] } // web service; [] = nothing live
  | { kind: 'static'; serviceId: string; root: string } // static site: serve files from root
  | { kind: 'suspended'; serviceId: string };
export interface RequestRecord {
  serviceId: string;
  method: string;
  path: string;
  host: string;
  statusCode: number;
  durationMs: number;
  bytesOut: number;
  upstream?: string;
  instanceId?: string;
}
export interface RouterOptions {
  host: string;
  port: number; // port 0 = pick a free one
  resolve(hostname: string): RouteTarget | undefined; // hostname lowercased, port stripped; called per request, must be cheap
  onRequest?(record: RequestRecord): void; // called once per finished request
  /** Slipway's defaults when omitted. */
  timeouts?: RouterTimeouts;
  log?: Logger;
}
export interface RouterTimeouts extends ConnectionTimeouts {
  /** An app that sends nothing for this long: 504 (or, mid-response, the response is cut off). */
  upstreamTimeoutMs: number;
}
export interface Router {
  port: number;
  close(): Promise<void>;
}

type InstancesTarget = Extract<RouteTarget, { kind: 'instances' }>;

/** nginx's status for a request whose client left before any response was sent. */
const CLIENT_CLOSED_REQUEST = 499;
/** Errors that mean the upstream never got to answer, typically an instance that just stopped. */
const RETRYABLE_CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET']);
/** The code of our own upstream-timeout error: answered 504 and never retried (the app got the request). */
const UPSTREAM_TIMEOUT = 'ETIMEDOUT';
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE']);
/** http-proxy appends to these on every attempt; a retry restores them first so values are not doubled. */
const FORWARDED_HEADERS = ['x-forwarded-for', 'x-forwarded-port', 'x-forwarded-proto', 'x-forwarded-host'] as const;

const silentLog = { warn() {}, error() {} };

/** Host header → the name resolve() knows: lowercased, without port or trailing dot; IPv6 literals keep their brackets. */
function hostnameOf(hostHeader: string | undefined): string {
  const host = (hostHeader ?? '').trim().toLowerCase();
  const end = host.startsWith('[') ? host.indexOf(']') + 1 : host.indexOf(':');
  const name = end > 0 ? host.slice(0, end) : host;
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** Only a request without a body can be sent a second time: its body stream has nothing left to replay. */
function isReplayable(req: http.IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (
    BODYLESS_METHODS.has(req.method ?? '') &&
    req.headers['transfer-encoding'] === undefined &&
    (length === undefined || length === '0')
  );
}

const upstreamName = (upstream: Upstream) => `${upstream.host}:${upstream.port}`;

/** State of one request (or one WebSocket connection) until its record is reported. */
interface Exchange {
  hostname: string;
  serviceId?: string;
  upstream?: string;
  instanceId?: string;
  startedAt: number;
  bytesAtStart: number;
}

export async function startRouter(options: RouterOptions): Promise<Router> {
  const log = options.log ?? silentLog;
  const timeouts = options.timeouts ?? {
    headersTimeoutMs: DEFAULT_TIMEOUT_SECONDS.headers * 1000,
    requestTimeoutMs: DEFAULT_TIMEOUT_SECONDS.request * 1000,
    keepAliveTimeoutMs: DEFAULT_TIMEOUT_SECONDS.keepAlive * 1000,
    upstreamTimeoutMs: DEFAULT_TIMEOUT_SECONDS.upstream * 1000,
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const proxy = httpProxy.createProxyServer({ agent, xfwd: true, ws: true, changeOrigin: false });
  const roundRobinTurns = new Map<string, number>();
  const openSockets = new Set<Socket>();
  /** Status of each proxied WebSocket connection, for its record: 101 until the upstream answers otherwise. */
  const upgradeStatuses = new WeakMap<Socket, number>();

  function pickUpstream(serviceId: string, upstreams: Upstream[]): Upstream | undefined {
    if (upstreams.length === 0) return undefined;
    const turn = roundRobinTurns.get(serviceId) ?? 0;
    roundRobinTurns.set(serviceId, (turn + 1) % upstreams.length);
    return upstreams[turn % upstreams.length];
  }

  function report(
    exchange: Exchange,
    method: string | undefined,
    url: string | undefined,
    statusCode: number,
    bytesWritten: number,
  ): void {
    if (!options.onRequest || exchange.serviceId === undefined) return; // unknown hosts belong to no service
    try {
      options.onRequest({
        serviceId: exchange.serviceId,
        method: method ?? '',
        path: url ?? '',
        host: exchange.hostname,
        statusCode,
        durationMs: performance.now() - exchange.startedAt,
        bytesOut: bytesWritten - exchange.bytesAtStart,
        ...(exchange.upstream ? { upstream: exchange.upstream } : {}),
        ...(exchange.instanceId ? { instanceId: exchange.instanceId } : {}),
      });
    } catch (err) {
      log.error({ err }, 'router: onRequest failed');
    }
  }

  function startExchange(req: http.IncomingMessage, socket: Socket): Exchange {
    return { hostname: hostnameOf(req.headers.host), startedAt: performance.now(), bytesAtStart: socket.bytesWritten };
  }

  function handleRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const socket = req.socket;
    const exchange = startExchange(req, socket);
    const forwardedHeaders = FORWARDED_HEADERS.map((name) => [name, req.headers[name]] as const);
    // Decided before http-proxy rewrites a DELETE/OPTIONS to content-length: 0 (dropping transfer-encoding).
    const replayable = isReplayable(req);
    res.once('close', () => {
      // The socket's byte count includes the status line and headers: what the client was actually sent.
      report(
        exchange,
        req.method,
        req.url,
        res.headersSent ? res.statusCode : CLIENT_CLOSED_REQUEST,
        socket.bytesWritten,
      );
    });

    /** Resolves the host and sends the request there; `failed` is the upstream a first attempt could not reach, which makes this the last try. */
    function route(failed?: Upstream): void {
      try {
        dispatch(exchange.hostname ? options.resolve(exchange.hostname) : undefined, failed);
      } catch (err) {
        fail(err);
      }
    }

    function dispatch(target: RouteTarget | undefined, failed?: Upstream): void {
      if (!target) return sendPage(res, 'noService', exchange.hostname);
      exchange.serviceId = target.serviceId;
      if (target.kind === 'suspended') return sendPage(res, 'suspended', exchange.hostname);
      if (target.kind === 'static') {
        serveStatic(req, res, target.root, exchange.hostname).catch((err: unknown) => fail(err));
        return;
      }
      proxyToInstance(target, failed);
    }

    function proxyToInstance(target: InstancesTarget, failed: Upstream | undefined): void {
      if (target.upstreams.length === 0) return sendPage(res, 'noLiveDeploy', exchange.hostname);
      const candidates = failed
        ? target.upstreams.filter((u) => upstreamName(u) !== upstreamName(failed))
        : target.upstreams;
      const upstream = pickUpstream(target.serviceId, candidates);
      if (!upstream) return sendPage(res, 'badGateway', exchange.hostname);
      exchange.upstream = upstreamName(upstream);
      exchange.instanceId = upstream.instanceId;

      proxy.web(req, res, { target: { host: upstream.host, port: upstream.port } }, (err: NodeJS.ErrnoException) => {
        if (res.destroyed || res.writableEnded) return; // the client left, or this was already answered
        if (!failed && !res.headersSent && RETRYABLE_CONNECT_ERRORS.has(err.code ?? '') && replayable) {
          log.warn(
            { err, serviceId: target.serviceId, upstream: exchange.upstream },
            'router: upstream unreachable, retrying once',
          );
          for (const [name, value] of forwardedHeaders) {
            if (value === undefined) delete req.headers[name];
            else req.headers[name] = value;
          }
          // A fresh resolve: the instance that refused may have just been replaced by a new deploy.
          return route(upstream);
        }
        log.warn({ err, serviceId: target.serviceId, upstream: exchange.upstream }, 'router: upstream failed');
        sendPage(res, err.code === UPSTREAM_TIMEOUT ? 'gatewayTimeout' : 'badGateway', exchange.hostname);
      });
    }

    function fail(err: unknown): void {
      log.error({ err, host: exchange.hostname }, 'router: request failed');
      sendPage(res, 'internalError', exchange.hostname);
    }

    route();
  }

  function handleUpgrade(req: http.IncomingMessage, socket: Socket, head: Buffer): void {
    // Node stops listening for errors on a socket it hands over for an upgrade; a reset must not crash the process.
    socket.on('error', () => socket.destroy());
    const exchange = startExchange(req, socket);
    socket.once('close', () =>
      report(exchange, req.method, req.url, upgradeStatuses.get(socket) ?? 101, socket.bytesWritten),
    );

    const reject = (kind: PageKind) => {
      const { status, response } = rawPageResponse(kind, exchange.hostname);
      upgradeStatuses.set(socket, status);
      socket.end(response, () => socket.destroy());
    };

    let target: RouteTarget | undefined;
    try {
      target = exchange.hostname ? options.resolve(exchange.hostname) : undefined;
    } catch (err) {
      log.error({ err, host: exchange.hostname }, 'router: resolve failed');
      return reject('internalError');
    }
    if (!target) return reject('noService');
    exchange.serviceId = target.serviceId;
    if (target.kind === 'suspended') return reject('suspended');
    if (target.kind === 'static') return reject('notFound'); // a static site has no WebSocket endpoint
    const upstream = pickUpstream(target.serviceId, target.upstreams);
    if (!upstream) return reject('noLiveDeploy');
    exchange.upstream = upstreamName(upstream);
    exchange.instanceId = upstream.instanceId;

    proxy.ws(
      req,
      socket,
      head,
      { target: { host: upstream.host, port: upstream.port } },
      (err: NodeJS.ErrnoException) => {
        log.warn(
          { err, serviceId: exchange.serviceId, upstream: exchange.upstream },
          'router: websocket upstream failed',
        );
        if (socket.bytesWritten === 0 && socket.writable)
          reject(err.code === UPSTREAM_TIMEOUT ? 'gatewayTimeout' : 'badGateway');
        else socket.destroy();
      },
    );
  }

  /**
   * A hung app must not hold the client (and a socket) forever: the upstream request fails once
   * its socket has been silent for upstreamTimeoutMs, waiting for the answer or in the middle of it.
   */
  function limitSilence(proxyReq: http.ClientRequest): void {
    proxyReq.setTimeout(timeouts.upstreamTimeoutMs, () => {
      proxyReq.destroy(
        Object.assign(new Error(`the app sent nothing for ${timeouts.upstreamTimeoutMs} ms`), {
          code: UPSTREAM_TIMEOUT,
        }),
      );
    });
  }

  // http-proxy only cancels the upstream request on 'aborted', which Node does not emit once a
  // body-less request was fully read: cancel it whenever the client goes away before the end.
  proxy.on('proxyReq', (proxyReq, _req, res) => {
    limitSilence(proxyReq);
    const cancel = () => {
      if (!res.writableFinished) proxyReq.destroy();
    };
    if (res.destroyed) cancel();
    else res.once('close', cancel);
  });
  // An upstream dying mid-body would otherwise leave the client waiting forever on a response that never ends.
  proxy.on('proxyRes', (proxyRes, _req, res) => {
    proxyRes.once('close', () => {
      if (!proxyRes.complete) res.destroy();
    });
  });
  // http-proxy ends the upstream socket only when the client socket errors; tie both lifetimes so neither lingers.
  proxy.on('proxyReqWs', (proxyReq, _req, socket) => {
    limitSilence(proxyReq);
    proxyReq.once('response', (upstreamRes) => upgradeStatuses.set(socket, upstreamRes.statusCode ?? 502));
    proxyReq.once('upgrade', (_res, upstreamSocket: Socket) => {
      upstreamSocket.setTimeout(0); // an open WebSocket may be quiet for as long as its ends like
      socket.once('close', () => upstreamSocket.destroy());
      upstreamSocket.once('close', () => socket.destroy());
    });
  });
  // Every proxy call passes its own error callback; this only guards against an 'error' event crashing the process.
  proxy.on('error', (err) => log.error({ err }, 'router: proxy error'));

  const server = http.createServer(serverTimeouts(timeouts), handleRequest);
  // Node types the socket as a Duplex; for a TCP server it is always a net.Socket.
  server.on('upgrade', (req, socket, head) => handleUpgrade(req, socket as Socket, head));
  server.on('connection', (socket: Socket) => {
    openSockets.add(socket);
    socket.once('close', () => openSockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of openSockets) socket.destroy();
        agent.destroy();
      }),
  };
}
