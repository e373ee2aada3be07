import type http from 'node:http';
import type { Socket } from 'node:net';
import { forwardUpgrade, UPSTREAM_TIMEOUT } from './forward.js';
import { rawPageResponse, type PageKind } from './pages.js';
import { toOriginForm } from './request-target.js';
import { isEncryptedRequest, pickUpstream, report, startExchange, upstreamName, type RouterState } from './exchange.js';
import type { RouteTarget } from './types.js';

/** Passes a WebSocket (an HTTP upgrade) to the app its host routes to; anything else gets a page, and the socket ends. */
export function handleUpgrade(state: RouterState, req: http.IncomingMessage, socket: Socket, head: Buffer): void {
  const { log, upgradeStatuses } = state;
  // Node stops listening for errors on a socket it hands over for an upgrade; a reset must not crash the process.
  socket.on('error', () => socket.destroy());
  const sameHost = toOriginForm(req);
  const exchange = startExchange(req, socket);
  socket.once('close', () =>
    report(
      state,
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
    target = exchange.hostname ? state.options.resolve(exchange.hostname) : undefined;
  } catch (err) {
    log.error({ err, host: exchange.hostname }, 'router: resolve failed');
    return reject('internalError');
  }
  if (!target || target.kind === 'redirect') return reject('noService');
  exchange.serviceId = target.serviceId;
  if (target.kind === 'suspended') return reject('suspended');
  if (target.kind === 'maintenance') return reject('maintenance');
  if (target.kind === 'static') return reject('notFound'); // a static site has no WebSocket endpoint
  const upstream = pickUpstream(state, target.serviceId, target.upstreams);
  if (!upstream) return reject('noLiveDeploy');
  exchange.upstream = upstreamName(upstream);
  exchange.instanceId = upstream.instanceId;

  forwardUpgrade(
    req,
    socket,
    head,
    upstream,
    {
      upstreamTimeoutMs: state.upstreamTimeoutMs,
      encrypted: isEncryptedRequest(state, req),
      behindProxy: state.options.behindProxy,
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
