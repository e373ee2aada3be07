import http from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export type IncomingRequest = http.IncomingMessage | Http2ServerRequest;
export type OutgoingResponse = http.ServerResponse | Http2ServerResponse;

/** The code of the router's own upstream-timeout error: answered 504 and never retried (the app got the request). */
export const UPSTREAM_TIMEOUT = 'ETIMEDOUT';

/** Headers of one connection, not of the message: never passed on, in either direction (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'http2-settings',
]);

function passable(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = String(headers.connection ?? '')
    .toLowerCase()
    .split(',')
    .map((h) => h.trim());
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(':') || HOP_BY_HOP.has(name) || named.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

const append = (existing: string | string[] | undefined, value: string) =>
  existing === undefined || existing === '' ? value : `${String(existing)},${value}`;

/** The request's end-to-end headers, with the X-Forwarded-* the app reads (RFC 7239's de facto forms). */
function forwardedHeaders(req: IncomingRequest, encrypted: boolean): http.OutgoingHttpHeaders {
  const headers = passable(req.headers);
  const host = String(req.headers[':authority'] ?? req.headers.host ?? '');
  headers.host = host;
  const socket = req.socket;
  headers['x-forwarded-for'] = append(req.headers['x-forwarded-for'], socket.remoteAddress ?? '');
  // The port the client asked for (Host's, or the scheme's), not the listener's: a forwarded 443 says 443.
  const port = /:(\d+)$/.exec(host)?.[1] ?? (encrypted ? '443' : '80');
  headers['x-forwarded-port'] = append(req.headers['x-forwarded-port'], port);
  headers['x-forwarded-proto'] = append(req.headers['x-forwarded-proto'], encrypted ? 'https' : 'http');
  headers['x-forwarded-host'] = append(req.headers['x-forwarded-host'], host);
  // A body-less DELETE or OPTIONS says so, or some servers wait for a body.
  if ((req.method === 'DELETE' || req.method === 'OPTIONS') && headers['content-length'] === undefined)
    if (req.headers['transfer-encoding'] === undefined && req.httpVersionMajor < 2) headers['content-length'] = '0';
  return headers;
}

/**
 * Sends `req` to `upstream` over the keep-alive `agent` and streams the answer back; HTTP/1.1 and HTTP/2 clients alike
 * (an HTTP/2 request reaches the app as HTTP/1.1). `failed` is called when no answer could start: the caller picks a
 * page (502, or 504 for UPSTREAM_TIMEOUT) or retries. Once the answer has started, a failure ends the response.
 */
export function forward(
  req: IncomingRequest,
  res: OutgoingResponse,
  upstream: { host: string; port: number },
  opts: { agent: http.Agent; upstreamTimeoutMs: number; encrypted: boolean },
  failed: (err: NodeJS.ErrnoException) => void,
): void {
  const headers = forwardedHeaders(req, opts.encrypted);
  let answered: http.IncomingMessage | undefined;
  const outgoing = http.request(
    { host: upstream.host, port: upstream.port, method: req.method, path: req.url ?? '/', headers, agent: opts.agent },
    (answer) => {
      answered = answer;
      const out = passable(answer.headers);
      const status = answer.statusCode ?? 502;
      // HTTP/2 has no reason phrase; HTTP/1.1 keeps the app's.
      if (req.httpVersionMajor < 2) (res as http.ServerResponse).writeHead(status, answer.statusMessage ?? '', out);
      else (res as Http2ServerResponse).writeHead(status, out);
      // An upstream dying mid-body must end the client's response, not leave it waiting.
      answer.once('close', () => {
        if (!answer.complete) res.destroy();
      });
      answer.pipe(res as http.ServerResponse);
    },
  );
  // A hung app must not hold the client (and a socket) forever: silent for upstreamTimeoutMs, the request fails.
  outgoing.setTimeout(opts.upstreamTimeoutMs, () =>
    outgoing.destroy(
      Object.assign(new Error(`the app sent nothing for ${opts.upstreamTimeoutMs} ms`), { code: UPSTREAM_TIMEOUT }),
    ),
  );
  outgoing.on('error', (err: NodeJS.ErrnoException) => {
    if (answered) res.destroy();
    else failed(err);
  });
  // The client left before the end: the upstream request is cancelled. (Not once the answer is complete: its socket
  // is back in the agent's pool, serving another request.)
  res.once('close', () => {
    if (!answered?.complete) outgoing.destroy();
  });
  // A retry sends a body-less request again: nothing is left to pipe, so the new request is ended here.
  if (req.readableEnded) outgoing.end();
  else (req as http.IncomingMessage).pipe(outgoing);
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
  opts: { upstreamTimeoutMs: number; encrypted: boolean },
  answered: (status: number) => void,
  failed: (err: NodeJS.ErrnoException) => void,
): void {
  const headers = forwardedHeaders(req, opts.encrypted);
  headers.connection = 'Upgrade';
  headers.upgrade = req.headers.upgrade ?? '';
  const outgoing = http.request({
    host: upstream.host,
    port: upstream.port,
    method: req.method,
    path: req.url ?? '/',
    headers,
    agent: false,
  });
  outgoing.setTimeout(opts.upstreamTimeoutMs, () =>
    outgoing.destroy(
      Object.assign(new Error(`the app sent nothing for ${opts.upstreamTimeoutMs} ms`), { code: UPSTREAM_TIMEOUT }),
    ),
  );
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
