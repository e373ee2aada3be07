import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';

/** The Docker Engine API version Slipway speaks: Debian's docker.io 20.10 (docs/swarm.md). */
export const ENGINE_API_VERSION = 'v1.41';

/** TLS files for a `tcp://` Engine API (docker's own --tlsverify setup: a CA, a client certificate and its key). */
export interface EngineTls {
  ca: string;
  cert: string;
  key: string;
}

/** A call the engine refused: its status and its own message (`{"message": …}`). */
export class EngineError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface EngineApi {
  /** Where it is (`unix:///run/docker.sock`, `tcp://10.0.0.1:2376`), for messages. */
  host: string;
  /** A JSON call; rejects with EngineError on a status of 400 or more. `query` values are sent as given. */
  call<T>(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    opts?: { query?: Record<string, string>; body?: unknown },
  ): Promise<T>;
  close(): Promise<void>;
}

/**
 * A client of one Docker Engine's HTTP API: a unix socket (`unix:///path`) or TCP, with TLS when `tls` is given (a
 * swarm manager on another machine must not be reachable without a client certificate: it runs anything as root).
 */
export function engineApi(host: string, opts: { tls?: EngineTls; timeoutMs?: number } = {}): EngineApi {
  const unix = /^unix:\/\/(\/.+)$/.exec(host)?.[1];
  const tcp = /^tcp:\/\/([^/]+)$/.exec(host)?.[1];
  if (!unix && !tcp) throw new Error(`not a Docker Engine address: ${host} (unix:///path or tcp://host:port)`);
  const tls = opts.tls;
  const dispatcher = new Agent({
    connect: unix
      ? { socketPath: unix }
      : tls
        ? { ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key) }
        : {},
    headersTimeout: opts.timeoutMs ?? 30_000,
    bodyTimeout: opts.timeoutMs ?? 30_000,
  });
  const origin = unix ? 'http://engine' : `${tls ? 'https' : 'http'}://${tcp}`;
  return {
    host,
    async call<T>(
      method: 'GET' | 'POST' | 'DELETE',
      path: string,
      call: { query?: Record<string, string>; body?: unknown } = {},
    ) {
      const query = call.query ? `?${new URLSearchParams(call.query)}` : '';
      const res = await request(`${origin}/${ENGINE_API_VERSION}${path}${query}`, {
        method,
        dispatcher,
        headers: call.body === undefined ? {} : { 'content-type': 'application/json' },
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
      });
      const text = await res.body.text();
      if (res.statusCode >= 400) {
        const message = (() => {
          try {
            return (JSON.parse(text) as { message?: string }).message ?? text;
          } catch {
            return text;
          }
        })();
        throw new EngineError(res.statusCode, `${method} ${path}: ${message.trim() || res.statusCode}`);
      }
      // Most answers are JSON; a few are text (`/_ping`'s OK).
      const json = String(res.headers['content-type'] ?? '').includes('json');
      return (json && text ? JSON.parse(text) : text) as T;
    },
    close: () => dispatcher.close(),
  };
}
