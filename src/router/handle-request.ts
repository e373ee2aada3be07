import type http from 'node:http';
import { hasNoBody } from './forward-headers.js';
import { forward, UPSTREAM_TIMEOUT } from './forward.js';
import { sendPage } from './pages.js';
import { toOriginForm } from './request-target.js';
import { serveStatic } from './static.js';
import {
  authorityOf,
  isEncryptedRequest,
  pickUpstream,
  report,
  startExchange,
  upstreamName,
  type Exchange,
  type RouterState,
} from './exchange.js';
import type { RouteTarget, Upstream } from './types.js';

type InstancesTarget = Extract<RouteTarget, { kind: 'instances' }>;

/** nginx's status for a request whose client left before any response was sent. */
const CLIENT_CLOSED_REQUEST = 499;
/** Errors that mean the upstream never got to answer, typically an instance that just stopped. */
const RETRYABLE_CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET']);
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE']);
const ACME_CHALLENGE = '/.well-known/acme-challenge/';
const ACME_TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

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

/** One request being answered: what routing it, and retrying it once, share. */
interface Call {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  exchange: Exchange;
  replayable: boolean;
  encrypted: boolean;
}

/**
 * Answers one request: a malformed target, an ACME challenge, a redirect to HTTPS for a name with a certificate, or
 * else whatever its host routes to (`route`). Its record is reported when the response closes.
 */
export function handleRequest(state: RouterState, req: http.IncomingMessage, res: http.ServerResponse): void {
  const socket = req.socket;
  const sameHost = toOriginForm(req); // before the exchange: it may give an HTTP/1.0 request its Host
  const exchange = startExchange(req, socket);
  const call: Call = { req, res, exchange, replayable: isReplayable(req), encrypted: isEncryptedRequest(state, req) };
  // An HTTP/2 connection carries many requests at once: its socket's byte count is not this response's.
  const sent = req.httpVersionMajor === 2 ? countBody(res) : () => socket.bytesWritten - exchange.bytesAtStart;
  res.once('close', () => {
    exchange.cancel?.();
    // The socket's byte count includes the status line and headers: what the client was actually sent.
    report(state, exchange, req.method, req.url, res.headersSent ? res.statusCode : CLIENT_CLOSED_REQUEST, sent());
  });

  if (!sameHost) return sendPage(res, 'badRequest', exchange.hostname);
  const { options } = state;
  const token = req.url?.startsWith(ACME_CHALLENGE) ? req.url.slice(ACME_CHALLENGE.length) : '';
  // An ACME token is base64url (RFC 8555 §8.3): anything else is not looked up, so it costs the store nothing.
  if (options.acmeAnswer && ACME_TOKEN.test(token)) {
    options.acmeAnswer(token).then(
      (answer) => {
        if (answer === undefined) return route(state, call); // not Slipway's: perhaps the app runs its own ACME client
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(answer) });
        res.end(answer);
      },
      (err: unknown) => fail(state, call, err),
    );
    return;
  }
  const secure = options.https;
  const challenge = req.url?.startsWith(ACME_CHALLENGE) === true; // answered over HTTP, whoever's it is
  if (secure && !challenge && !call.encrypted && secure.certificates.has(exchange.hostname)) {
    const port = secure.redirectPort ?? state.httpsPort();
    return redirect(res, `https://${exchange.hostname}${port === 443 ? '' : `:${port}`}${req.url ?? '/'}`);
  }
  route(state, call);
}

/** Resolves the host and sends the request there; `failed` is the upstream a first attempt could not reach, which makes this the last try. */
function route(state: RouterState, call: Call, failed?: Upstream): void {
  try {
    const { hostname } = call.exchange;
    dispatch(state, call, hostname ? state.options.resolve(hostname) : undefined, failed);
  } catch (err) {
    fail(state, call, err);
  }
}

function dispatch(state: RouterState, call: Call, target: RouteTarget | undefined, failed?: Upstream): void {
  const { req, res, exchange } = call;
  if (!target) return sendPage(res, 'noService', exchange.hostname);
  if (target.kind === 'redirect') {
    // Same scheme and port as the request came in on, the primary name, the same path.
    const port = /:(\d+)$/.exec(authorityOf(req))?.[1];
    const scheme = call.encrypted ? 'https' : 'http';
    return redirect(res, `${scheme}://${target.to}${port ? `:${port}` : ''}${req.url ?? '/'}`);
  }
  exchange.serviceId = target.serviceId;
  if (target.kind === 'suspended') return sendPage(res, 'suspended', exchange.hostname);
  if (target.kind === 'maintenance')
    return target.uri ? redirect(res, target.uri, 302) : sendPage(res, 'maintenance', exchange.hostname);
  if (target.kind === 'static') {
    serveStatic(req, res, target.root, exchange.hostname, target.rules).catch((err: unknown) => fail(state, call, err));
    return;
  }
  proxyToInstance(state, call, target, failed);
}

function proxyToInstance(state: RouterState, call: Call, target: InstancesTarget, failed: Upstream | undefined): void {
  const { req, res, exchange } = call;
  if (target.upstreams.length === 0) return sendPage(res, 'noLiveDeploy', exchange.hostname);
  const candidates = failed
    ? target.upstreams.filter((u) => upstreamName(u) !== upstreamName(failed))
    : target.upstreams;
  const upstream = pickUpstream(state, target.serviceId, candidates);
  if (!upstream) return sendPage(res, 'badGateway', exchange.hostname);
  exchange.upstream = upstreamName(upstream);
  exchange.instanceId = upstream.instanceId;

  const via = { pools: state.pools, encrypted: call.encrypted, behindProxy: state.options.behindProxy };
  exchange.cancel = forward(req, res, upstream, via, (err) => {
    if (res.destroyed || res.writableEnded) return; // the client left, or this was already answered
    if (!failed && !res.headersSent && RETRYABLE_CONNECT_ERRORS.has(err.code ?? '') && call.replayable) {
      state.log.warn(
        { err, serviceId: target.serviceId, upstream: exchange.upstream },
        'router: upstream unreachable, retrying once',
      );
      // A fresh resolve: the instance that refused may have just been replaced by a new deploy.
      return route(state, call, upstream);
    }
    state.log.warn({ err, serviceId: target.serviceId, upstream: exchange.upstream }, 'router: upstream failed');
    sendPage(res, err.code === UPSTREAM_TIMEOUT ? 'gatewayTimeout' : 'badGateway', exchange.hostname);
  });
}

function fail(state: RouterState, call: Call, err: unknown): void {
  state.log.error({ err, host: call.exchange.hostname }, 'router: request failed');
  sendPage(call.res, 'internalError', call.exchange.hostname);
}

function redirect(res: http.ServerResponse, location: string, status = 301): void {
  // A temporary one (maintenance mode's page) must not be cached by the browser.
  res.writeHead(status, {
    location,
    'content-length': '0',
    ...(status === 302 ? { 'cache-control': 'no-store' } : {}),
  });
  res.end();
}
