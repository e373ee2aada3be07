import type http from 'node:http';
import type { Socket } from 'node:net';
import httpProxy from 'http-proxy';
import type { Logger } from '../lib/logger.js';
import { UPSTREAM_TIMEOUT } from './forward.js';

/**
 * WebSocket upgrades, proxied by http-proxy (requests go through forward.ts): the handshake fails with a 504 when the
 * app stays silent for `upstreamTimeoutMs`, and the two sockets close together. `upgradeStatuses` holds each proxied
 * WebSocket's status for its request record.
 */
export function createWebSocketProxy(agent: http.Agent, upstreamTimeoutMs: number, log: Pick<Logger, 'error'>) {
  const proxy = httpProxy.createProxyServer({ agent, xfwd: true, ws: true, changeOrigin: false });
  /** Status of each proxied WebSocket connection, for its record: 101 until the upstream answers otherwise. */
  const upgradeStatuses = new WeakMap<Socket, number>();

  // http-proxy ends the upstream socket only when the client socket errors; tie both lifetimes so neither lingers.
  proxy.on('proxyReqWs', (proxyReq, _req, socket) => {
    proxyReq.setTimeout(upstreamTimeoutMs, () => {
      const err = new Error(`the app sent nothing for ${upstreamTimeoutMs} ms`);
      proxyReq.destroy(Object.assign(err, { code: UPSTREAM_TIMEOUT }));
    });
    proxyReq.once('response', (upstreamRes) => upgradeStatuses.set(socket, upstreamRes.statusCode ?? 502));
    proxyReq.once('upgrade', (_res, upstreamSocket: Socket) => {
      upstreamSocket.setTimeout(0); // an open WebSocket may be quiet for as long as its ends like
      socket.once('close', () => upstreamSocket.destroy());
      upstreamSocket.once('close', () => socket.destroy());
    });
  });
  // Every proxy call passes its own error callback; this only guards against an 'error' event crashing the process.
  proxy.on('error', (err) => log.error({ err }, 'router: proxy error'));

  return Object.assign(proxy, { upgradeStatuses });
}
