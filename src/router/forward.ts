import http from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import {
  forwardedHeaders,
  hasNoBody,
  headerObject,
  HOP_BY_HOP,
  passableRaw,
  type IncomingRequest,
} from './forward-headers.js';

export type { IncomingRequest } from './forward-headers.js';
export type OutgoingResponse = http.ServerResponse | Http2ServerResponse;

/** The code of the router's own upstream-timeout error: answered 504 and never retried (the app got the request). */
export const UPSTREAM_TIMEOUT = 'ETIMEDOUT';

const silentFor = (ms: number) =>
  Object.assign(new Error(`the app sent nothing for ${ms} ms`), { code: UPSTREAM_TIMEOUT });

/**
 * The keep-alive pools to the apps: undici's, one per instance address. Its dispatch API hands the answer over as
 * callbacks, with no stream and no header object in between: a minimal proxy built on it spends about a quarter less
 * CPU per request than one on `node:http`'s client (bench/router.ts compares the router with the latter). Its timeouts
 * are the upstream timeout: for the answer's headers, and between two chunks of its body.
 */
export function createUpstreamPools(timeoutMs: number) {
  const options: Pool.Options = {
    connections: 256,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    // An idle connection is closed this long before the app's Keep-Alive hint says the app will close it. With
    // undici's default (1 s), an app announcing timeout=2 got a new connection for every request (router.test.ts).
    keepAliveTimeoutThreshold: 500,
  };
  // Every deploy brings new addresses, so a pool left without a connection or a request is dropped (undici's own
  // Agent keeps one per address it ever saw, for good: a router up for months would hold every past instance's).
  const pools = new Map<string, Pool>();
  const dropIfIdle = (origin: string, pool: Pool) =>
    setImmediate(() => {
      const { connected, pending, running } = pool.stats;
      if (connected + pending + running > 0 || pools.get(origin) !== pool) return;
      pools.delete(origin);
      pool.close().catch(() => undefined); // already destroyed: the router is closing
    });
  function poolFor(upstream: { host: string; port: number }): Pool {
    const host = upstream.host.includes(':') ? `[${upstream.host}]` : upstream.host;
    const origin = `http://${host}:${upstream.port}`;
    const pool = pools.get(origin);
    if (pool) return pool;
    const created = new Pool(origin, options);
    created.on('disconnect', () => dropIfIdle(origin, created));
    created.on('connectionError', () => dropIfIdle(origin, created));
    pools.set(origin, created);
    return created;
  }
  return {
    poolFor,
    timeoutMs,
    /** How many addresses have a pool: those with a connection or a request, and none other for long. */
    size: () => pools.size,
    close: () => Promise.all([...pools.values()].map((pool) => pool.destroy().catch(() => undefined))),
  };
}
export type UpstreamPools = ReturnType<typeof createUpstreamPools>;

/** undici's errors in the terms the router decides by: refused or reset (retryable), silent (504), or other (502). */
function asForwardError(err: NodeJS.ErrnoException, timeoutMs: number): NodeJS.ErrnoException {
  if (err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT') return silentFor(timeoutMs);
  // "other side closed" and its kin: the app's end of the connection went away before it answered.
  if (err.code === 'UND_ERR_SOCKET')
    return Object.assign(err, { code: (err.cause as { code?: string })?.code ?? 'ECONNRESET' });
  return err;
}

const latin1 = (raw: Buffer[]) => raw.map((b) => b.toString('latin1'));

/**
 * Sends `req` to `upstream` over its pool's kept-alive connections and streams the answer back; HTTP/1.1 and HTTP/2
 * clients alike (an HTTP/2 request reaches the app as HTTP/1.1). `failed` is called when no answer could start: the
 * caller picks a page (502, or 504 for UPSTREAM_TIMEOUT) or retries. Once the answer has started, a failure ends the
 * response. Returns what to call when the client's response closes: it cancels an upstream request still running.
 */
export function forward(
  req: IncomingRequest,
  res: OutgoingResponse,
  upstream: { host: string; port: number },
  opts: { pools: UpstreamPools; encrypted: boolean; behindProxy?: boolean },
  failed: (err: NodeJS.ErrnoException) => void,
): () => void {
  let abort: ((err?: Error) => void) | undefined;
  let started = false;
  let done = false;
  let resumeReading = () => undefined as void;
  const http1 = req.httpVersionMajor < 2;
  const body = hasNoBody(req) ? null : (req as http.IncomingMessage);
  const handler: Dispatcher.DispatchHandlers = {
    onConnect: (cancel) => (abort = cancel),
    onHeaders(status, rawHeaders, resume, statusText) {
      if (status < 200) return true; // 100 Continue, 103 Early Hints: the client gets the final answer only
      started = true;
      const headers = passableRaw(latin1(rawHeaders));
      // HTTP/2 has no reason phrase; HTTP/1.1 keeps the app's.
      if (http1) (res as http.ServerResponse).writeHead(status, statusText, headers);
      else (res as Http2ServerResponse).writeHead(status, headerObject(headers));
      resumeReading = resume;
      return true;
    },
    onData(chunk) {
      if ((res as http.ServerResponse).write(chunk)) return true;
      // The client is slower than the app: undici stops reading from the app until the client has taken this.
      res.once('drain', resumeReading);
      return false;
    },
    onComplete() {
      done = true;
      res.end();
    },
    onError(err) {
      done = true;
      if (started || res.destroyed) res.destroy();
      else failed(asForwardError(err, opts.pools.timeoutMs));
    },
  };
  opts.pools.poolFor(upstream).dispatch(
    {
      path: req.url ?? '/',
      method: req.method as Dispatcher.HttpMethod,
      headers: forwardedHeaders(req, opts),
      body,
    },
    handler,
  );
  // The client left before the end: the upstream request is cancelled, and its connection with it.
  return () => {
    if (!done) abort?.(new Error('the client closed the connection'));
  };
}

/**
 * A WebSocket (or any Upgrade) handshake sent on to `upstream` on a connection of its own. On 101 the two sockets are
 * joined and close together; any other answer is passed back as it came and the connection ends. `answered` tells the
 * status; `failed` is called when no answer could start (UPSTREAM_TIMEOUT: the app stayed silent).
 */
export function forwardUpgrade(
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
  upstream: { host: string; port: number },
  opts: { upstreamTimeoutMs: number; encrypted: boolean; behindProxy?: boolean },
  answered: (status: number) => void,
  failed: (err: NodeJS.ErrnoException) => void,
): void {
  const headers = [...forwardedHeaders(req, opts), 'connection', 'Upgrade', 'upgrade', req.headers.upgrade ?? ''];
  const outgoing = http.request({
    host: upstream.host,
    port: upstream.port,
    method: req.method,
    path: req.url ?? '/',
    headers,
    agent: false,
  });
  outgoing.setTimeout(opts.upstreamTimeoutMs, () => outgoing.destroy(silentFor(opts.upstreamTimeoutMs)));
  let started = false;
  outgoing.on('error', (err: NodeJS.ErrnoException) => (started ? socket.destroy() : failed(err)));
  socket.once('close', () => outgoing.destroy());
  /** The app's status line and headers as it sent them; `close`: its hop-by-hop headers replaced by Connection: close. */
  const headerBlock = (res: http.IncomingMessage, close: boolean) => {
    const lines = [`HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}`];
    for (let i = 0; i < res.rawHeaders.length; i += 2)
      if (!close || !HOP_BY_HOP.has(res.rawHeaders[i]!.toLowerCase()))
        lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
    if (close) lines.push('Connection: close');
    return `${lines.join('\r\n')}\r\n\r\n`;
  };
  outgoing.once('upgrade', (res, upstreamSocket: Socket, upstreamHead: Buffer) => {
    started = true;
    answered(101);
    upstreamSocket.setTimeout(0); // an open WebSocket may be quiet for as long as its ends like
    socket.once('close', () => upstreamSocket.destroy());
    upstreamSocket.once('close', () => socket.destroy());
    upstreamSocket.on('error', () => socket.destroy());
    socket.write(headerBlock(res, false));
    if (upstreamHead.length) socket.write(upstreamHead);
    if (head.length) upstreamSocket.write(head);
    upstreamSocket.pipe(socket).pipe(upstreamSocket);
  });
  // The app declined the upgrade: its answer goes back, and the connection ends with it. Node has decoded a chunked
  // body, so Transfer-Encoding is dropped and the close delimits the body (RFC 9112 §6.3).
  outgoing.once('response', (res) => {
    started = true;
    answered(res.statusCode ?? 502);
    socket.write(headerBlock(res, true));
    res.pipe(socket);
  });
  outgoing.end();
}
