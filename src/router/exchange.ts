import type http from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../lib/logger.js';
import type { UpstreamPools } from './forward.js';
import { hostnameOf } from './request-target.js';
import type { RequestRecord, RouterOptions, Upstream } from './types.js';

/** What every request and upgrade of one router reads and updates (made once by startRouter, router.ts). */
export interface RouterState {
  options: RouterOptions;
  log: Pick<Logger, 'warn' | 'error'>;
  pools: UpstreamPools;
  upstreamTimeoutMs: number;
  /** The port HTTPS redirects name: the HTTPS listener's (known once it listens), or the one it is forwarded from. */
  httpsPort(): number;
  roundRobinTurns: Map<string, number>;
  /** Each upgraded connection's status, for its record: 101, or what the app or the router answered instead. */
  upgradeStatuses: WeakMap<Socket, number>;
}

/** State of one request (or one WebSocket connection) until its record is reported. */
export interface Exchange {
  hostname: string;
  serviceId?: string;
  upstream?: string;
  instanceId?: string;
  startedAt: number;
  bytesAtStart: number;
  /** Cancels the request to the app, if one is running: the client left. */
  cancel?: () => void;
}

const isEncrypted = (socket: Socket) => (socket as TLSSocket).encrypted === true;

/** The host a request names: `Host`, or HTTP/2's `:authority`. */
export const authorityOf = (req: http.IncomingMessage) => req.headers.host ?? String(req.headers[':authority'] ?? '');

export const upstreamName = (upstream: Upstream) => `${upstream.host}:${upstream.port}`;

export function startExchange(req: http.IncomingMessage, socket: Socket): Exchange {
  return { hostname: hostnameOf(authorityOf(req)), startedAt: performance.now(), bytesAtStart: socket.bytesWritten };
}

/** Over TLS: the router's own, or nginx's in front of it (which says so). */
export function isEncryptedRequest(state: RouterState, req: http.IncomingMessage): boolean {
  return (
    isEncrypted(req.socket) || (state.options.behindProxy === true && req.headers['x-forwarded-proto'] === 'https')
  );
}

export function pickUpstream(state: RouterState, serviceId: string, upstreams: Upstream[]): Upstream | undefined {
  if (upstreams.length === 0) return undefined;
  const turn = state.roundRobinTurns.get(serviceId) ?? 0;
  state.roundRobinTurns.set(serviceId, (turn + 1) % upstreams.length);
  return upstreams[turn % upstreams.length];
}

export function report(
  state: RouterState,
  exchange: Exchange,
  method: string | undefined,
  url: string | undefined,
  statusCode: number,
  bytesOut: number,
): void {
  const { options } = state;
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
    state.log.error({ err }, 'router: onRequest failed');
  }
}
