import type { ServerOptions } from 'node:http';

/** The connection deadlines shared by the API and the router (app/config.ts). */
export interface ConnectionTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/** The defaults (app/config.ts); seconds, as the settings are written. */
export const DEFAULT_TIMEOUT_SECONDS = { headers: 20, request: 300, keepAlive: 72, upstream: 300 };

/**
 * Node's http.Server options for them. Node enforces the headers and request deadlines from a
 * timer (every 30 s by default, so a 20 s headers timeout would let a slowloris client hold on for
 * up to 50 s): here it runs every quarter of the headers timeout (at most every 5 s).
 * No idle-socket timeout: a handler may work a while without sending anything (checking an
 * archive), and an upgraded WebSocket is the log stream's to keep alive.
 */
export function serverTimeouts(
  t: ConnectionTimeouts,
): Required<
  Pick<ServerOptions, 'headersTimeout' | 'requestTimeout' | 'keepAliveTimeout' | 'connectionsCheckingInterval'>
> {
  return {
    headersTimeout: t.headersTimeoutMs,
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(5_000, Math.round(t.headersTimeoutMs / 4))),
  };
}
