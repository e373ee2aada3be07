import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Server, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { DEFAULT_TIMEOUT_SECONDS, serverTimeouts, type ConnectionTimeouts } from '../lib/http-timeouts.js';
import { rawPageResponse, sendPage, type PageKind } from './pages.js';
import { createUpstreamPools, forward, forwardUpgrade, UPSTREAM_TIMEOUT } from './forward.js';
import { hasNoBody } from './forward-headers.js';
import { hostnameOf, toOriginForm } from './request-target.js';
import { serveStatic } from './static.js';
import type { CompiledRules } from './static-rules.js';
import type { CertificateStore } from './tls.js';
import type { Logger } from '../lib/logger.js';

export interface Upstream {
  host: string;
  port: number;
  /** The instance listening there (labels its request log entries). */
  instanceId?: string;
}
export type RouteTarget =
  | { kind: 'instances'; serviceId: string; upstreams: Upstream[] } // web service; [] = nothing live
  | { kind: 'static'; serviceId: string; root: string; rules?: CompiledRules } // static site: files from root
  | { kind: 'suspended'; serviceId: string }
  | { kind: 'redirect'; to: string }; // a custom domain's www./apex twin: 301 to this host, same path
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
  /** Read from the access log at start: served while Slipway was down, logged in full (logs/requests.ts). */
  backlog?: true;
}
export interface RouterOptions {
  host: string;
  port: number; // port 0 = pick a free one
  resolve(hostname: string): RouteTarget | undefined; // hostname lowercased, port stripped; called per request, must be cheap
  onRequest?(record: RequestRecord): void; // called once per finished request
  /** Slipway's defaults when omitted. */
  timeouts?: RouterTimeouts;
  log?: Logger;
  /** An HTTPS listener beside the HTTP one; a name with a certificate there gets 301s from HTTP to HTTPS. */
  https?: {
    port: number; // 0 = pick a free one
    certificates: CertificateStore;
    /** The port HTTPS redirects name (a port forwarded from 443): the listener's by default. */
    redirectPort?: number;
  };
  /** ACME http-01: the key authorization for a token, served at /.well-known/acme-challenge/<token>. */
  acmeAnswer?(token: string): Promise<string | undefined>;
  /**
   * Behind nginx (router/nginx/): nginx terminates TLS and says so in X-Forwarded-Proto, so this router opens no HTTPS
   * listener of its own; `https` then only names the certificates and the port that redirects point at.
   */
  behindProxy?: boolean;
}
export interface RouterTimeouts extends ConnectionTimeouts {
  /** An app that sends nothing for this long: 504 (or, mid-response, the response is cut off). */
  upstreamTimeoutMs: number;
}
export interface Router {
  port: number;
  /** The HTTPS listener's port, when there is one. */
  httpsPort?: number;
  close(): Promise<void>;
}

type InstancesTarget = Extract<RouteTarget, { kind: 'instances' }>;

/** nginx's status for a request whose client left before any response was sent. */
const CLIENT_CLOSED_REQUEST = 499;
/** Errors that mean the upstream never got to answer, typically an instance that just stopped. */
const RETRYABLE_CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET']);
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE']);

const silentLog = { warn() {}, error() {} };
const ACME_CHALLENGE = '/.well-known/acme-challenge/';
const ACME_TOKEN = /^[A-Za-z0-9_-]{1,256}$/;
const isEncrypted = (socket: Socket) => (socket as TLSSocket).encrypted === true;

/** The host a request names: `Host`, or HTTP/2's `:authority`. */
const authorityOf = (req: http.IncomingMessage) => req.headers.host ?? String(req.headers[':authority'] ?? '');

/** Counts the body bytes written to a response (HTTP/2: its headers are compressed and shared, so not counted). */
function countBody(res: http.ServerResponse): () => number {
  let bytes = 0;
  const count = (chunk: unknown, encoding?: unknown) => {
    if (typeof chunk === 'string')
      bytes += Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    else if (chunk instanceof Uint8Array) bytes += chunk.byteLength;
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => http.ServerResponse;
  res.write = ((...args: unknown[]) => (count(args[0], args[1]), write(...args))) as typeof res.write;
  res.end = ((...args: unknown[]) => (
    typeof args[0] !== 'function' && count(args[0], args[1]),
    end(...args)
  )) as typeof res.end;
  return () => bytes;
}

/** Only a request without a body can be sent a second time: its body stream has nothing left to replay. */
const isReplayable = (req: http.IncomingMessage) => BODYLESS_METHODS.has(req.method ?? '') && hasNoBody(req);

const upstreamName = (upstream: Upstream) => `${upstream.host}:${upstream.port}`;

/** State of one request (or one WebSocket connection) until its record is reported. */
interface Exchange {
  hostname: string;
  serviceId?: string;
  upstream?: string;
  instanceId?: string;
  startedAt: number;
  bytesAtStart: number;
  /** Cancels the request to the app, if one is running: the client left. */
  cancel?: () => void;
}

export async function startRouter(options: RouterOptions): Promise<Router> {
  const log = options.log ?? silentLog;
  const timeouts = options.timeouts ?? {
    headersTimeoutMs: DEFAULT_TIMEOUT_SECONDS.headers * 1000,
    requestTimeoutMs: DEFAULT_TIMEOUT_SECONDS.request * 1000,
    keepAliveTimeoutMs: DEFAULT_TIMEOUT_SECONDS.keepAlive * 1000,
    upstreamTimeoutMs: DEFAULT_TIMEOUT_SECONDS.upstream * 1000,
  };
  const pools = createUpstreamPools(timeouts.upstreamTimeoutMs);
  const roundRobinTurns = new Map<string, number>();
  const openSockets = new Set<Socket>();
  /** Each upgraded connection's status, for its record: 101, or what the app or the router answered instead. */
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
    bytesOut: number,
  ): void {
    if (!options.onRequest || exchange.serviceId === undefined) return; // unknown hosts belong to no service
    const record: RequestRecord = {
      serviceId: exchange.serviceId,
      method: method ?? '',
      path: url ?? '',
      host: exchange.hostname,
      statusCode,
      durationMs: performance.now() - exchange.startedAt,
      bytesOut,
    };
    if (exchange.upstream) record.upstream = exchange.upstream;
    if (exchange.instanceId) record.instanceId = exchange.instanceId;
    try {
      options.onRequest(record);
    } catch (err) {
      log.error({ err }, 'router: onRequest failed');
    }
  }

  /** Over TLS: the router's own, or nginx's in front of it (which says so). */
  function isEncryptedRequest(req: http.IncomingMessage): boolean {
    return isEncrypted(req.socket) || (options.behindProxy === true && req.headers['x-forwarded-proto'] === 'https');
  }

  function startExchange(req: http.IncomingMessage, socket: Socket): Exchange {
    return { hostname: hostnameOf(authorityOf(req)), startedAt: performance.now(), bytesAtStart: socket.bytesWritten };
  }

  function handleRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const socket = req.socket;
    const sameHost = toOriginForm(req); // before the exchange: it may give an HTTP/1.0 request its Host
    const exchange = startExchange(req, socket);
    const replayable = isReplayable(req);
    const encrypted = isEncryptedRequest(req);
    // An HTTP/2 connection carries many requests at once: its socket's byte count is not this response's.
    const sent = req.httpVersionMajor === 2 ? countBody(res) : () => socket.bytesWritten - exchange.bytesAtStart;
    res.once('close', () => {
      exchange.cancel?.();
      // The socket's byte count includes the status line and headers: what the client was actually sent.
      report(exchange, req.method, req.url, res.headersSent ? res.statusCode : CLIENT_CLOSED_REQUEST, sent());
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
      if (target.kind === 'redirect') {
        // Same scheme and port as the request came in on, the primary name, the same path.
        const port = /:(\d+)$/.exec(authorityOf(req))?.[1];
        const scheme = encrypted ? 'https' : 'http';
        return redirect(res, `${scheme}://${target.to}${port ? `:${port}` : ''}${req.url ?? '/'}`);
      }
      exchange.serviceId = target.serviceId;
      if (target.kind === 'suspended') return sendPage(res, 'suspended', exchange.hostname);
      if (target.kind === 'static') {
        serveStatic(req, res, target.root, exchange.hostname, target.rules).catch((err: unknown) => fail(err));
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

      const via = { pools, encrypted, behindProxy: options.behindProxy };
      exchange.cancel = forward(req, res, upstream, via, (err) => {
        if (res.destroyed || res.writableEnded) return; // the client left, or this was already answered
        if (!failed && !res.headersSent && RETRYABLE_CONNECT_ERRORS.has(err.code ?? '') && replayable) {
          log.warn(
            { err, serviceId: target.serviceId, upstream: exchange.upstream },
            'router: upstream unreachable, retrying once',
          );
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

    if (!sameHost) return sendPage(res, 'badRequest', exchange.hostname);
    const token = req.url?.startsWith(ACME_CHALLENGE) ? req.url.slice(ACME_CHALLENGE.length) : '';
    // An ACME token is base64url (RFC 8555 §8.3): anything else is not looked up, so it costs the store nothing.
    if (options.acmeAnswer && ACME_TOKEN.test(token)) {
      options.acmeAnswer(token).then((answer) => {
        if (answer === undefined) return route(); // not Slipway's: perhaps the app runs its own ACME client
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(answer) });
        res.end(answer);
      }, fail);
      return;
    }
    const secure = options.https;
    const challenge = req.url?.startsWith(ACME_CHALLENGE) === true; // answered over HTTP, whoever's it is
    if (secure && !challenge && !encrypted && secure.certificates.has(exchange.hostname)) {
      const port = secure.redirectPort ?? httpsPort;
      return redirect(res, `https://${exchange.hostname}${port === 443 ? '' : `:${port}`}${req.url ?? '/'}`);
    }
    route();
  }

  function redirect(res: http.ServerResponse, location: string): void {
    res.writeHead(301, { location, 'content-length': '0' });
    res.end();
  }

  function handleUpgrade(req: http.IncomingMessage, socket: Socket, head: Buffer): void {
    // Node stops listening for errors on a socket it hands over for an upgrade; a reset must not crash the process.
    socket.on('error', () => socket.destroy());
    const sameHost = toOriginForm(req);
    const exchange = startExchange(req, socket);
    socket.once('close', () =>
      report(
        exchange,
        req.method,
        req.url,
        upgradeStatuses.get(socket) ?? 101,
        socket.bytesWritten - exchange.bytesAtStart,
      ),
    );

    const reject = (kind: PageKind) => {
      const { status, response } = rawPageResponse(kind, exchange.hostname);
      upgradeStatuses.set(socket, status);
      socket.end(response, () => socket.destroy());
    };

    if (!sameHost) return reject('badRequest');
    let target: RouteTarget | undefined;
    try {
      target = exchange.hostname ? options.resolve(exchange.hostname) : undefined;
    } catch (err) {
      log.error({ err, host: exchange.hostname }, 'router: resolve failed');
      return reject('internalError');
    }
    if (!target || target.kind === 'redirect') return reject('noService');
    exchange.serviceId = target.serviceId;
    if (target.kind === 'suspended') return reject('suspended');
    if (target.kind === 'static') return reject('notFound'); // a static site has no WebSocket endpoint
    const upstream = pickUpstream(target.serviceId, target.upstreams);
    if (!upstream) return reject('noLiveDeploy');
    exchange.upstream = upstreamName(upstream);
    exchange.instanceId = upstream.instanceId;

    forwardUpgrade(
      req,
      socket,
      head,
      upstream,
      {
        upstreamTimeoutMs: timeouts.upstreamTimeoutMs,
        encrypted: isEncryptedRequest(req),
        behindProxy: options.behindProxy,
      },
      (status) => upgradeStatuses.set(socket, status),
      (err) => {
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

  function serve(server: http.Server, port: number): Promise<number> {
    // Node types the socket as a Duplex; for a TCP server it is always a net.Socket.
    server.on('upgrade', (req, socket, head) => handleUpgrade(req, socket as Socket, head));
    server.on('connection', (socket: Socket) => {
      openSockets.add(socket);
      socket.once('close', () => openSockets.delete(socket));
    });
    return listen(server, port, options.host);
  }
  const servers: Server[] = [http.createServer(serverTimeouts(timeouts), handleRequest)];
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
      handleRequest(req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse),
    );
    Object.assign(secure, serverTimeouts(timeouts)); // what http.Server takes as options, for HTTP/1.1 over TLS
    secure.setTimeout(timeouts.keepAliveTimeoutMs * 4); // an HTTP/2 session idle that long is closed
    servers.push(secure as unknown as Server);
  }
  // HTTPS first: the HTTP listener's redirects name its port.
  const httpsPort = ownTls
    ? await serve(servers[1] as http.Server, options.https!.port)
    : (options.https?.redirectPort ?? 0);
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
