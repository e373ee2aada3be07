import type http from 'node:http';
import type { Http2ServerRequest } from 'node:http2';

export type IncomingRequest = http.IncomingMessage | Http2ServerRequest;

/**
 * Headers of one connection, not of the message: never passed on, in either direction (RFC 9110 §7.6.1). `expect` too:
 * the router's own server answers `100 Continue` to the client, and the app gets the whole body.
 */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'http2-settings',
  'expect',
]);

/** Adds the header names a Connection header lists (RFC 9110 §7.6.1) to `named`; the usual `keep-alive` or `close` adds none. */
function addNamedByConnection(value: string, named: Set<string> | undefined): Set<string> | undefined {
  const text = value.toLowerCase();
  if (text === 'keep-alive' || text === 'close') return named;
  const names = named ?? new Set<string>();
  for (const name of text.split(',')) names.add(name.trim());
  return names;
}

/**
 * The end-to-end headers of a flat list (name, value, name, value…, as Node's `rawHeaders` and undici's), in the order
 * and case they came, without hop-by-hop ones, pseudo-headers, those the Connection header names and those in
 * `replaced` (lowercase). A flat list goes on as it is: no header object is built, and no name is checked one by one
 * again (the parser checked them).
 */
export function passableRaw(raw: ReadonlyArray<string>, replaced?: Set<string>): string[] {
  // A Set: a hostile Connection header may list thousands of names, each looked up for every header.
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === 'connection')
      named = addNamedByConnection(raw[i + 1]!, named);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (lower.startsWith(':') || HOP_BY_HOP.has(lower) || replaced?.has(lower) || named?.has(lower)) continue;
    out.push(name, raw[i + 1]!);
  }
  return out;
}

/** A flat list as HTTP/2 takes it: an object of lowercase names, repeated names as arrays (Set-Cookie). */
export function headerObject(flat: ReadonlyArray<string>): http.OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i < flat.length; i += 2) {
    const name = flat[i]!.toLowerCase();
    const value = flat[i + 1]!;
    const had = out[name];
    out[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
  }
  return out;
}

const append = (existing: string | string[] | undefined, value: string) =>
  existing === undefined || existing === '' ? value : `${String(existing)},${value}`;

/** The headers the router writes itself: taken from the request's parsed ones, not passed on raw. */
const REPLACED = new Set([
  'host',
  'x-forwarded-for',
  'x-forwarded-port',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-real-ip',
  'forwarded',
]);

/** RFC 7239 §6: an IPv6 node is bracketed and quoted. */
const forwardedNode = (address: string) => (address.includes(':') ? `"[${address}]"` : address);
/** RFC 7230's quoted-string: `"` and `\` escaped. */
const quoted = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;

/**
 * The request's end-to-end headers, with what the app reads about the client as a flat list: X-Forwarded-* (their
 * de facto forms) and RFC 7239's Forwarded get the router's own entry after whatever the client sent (an app takes the
 * last, the one it can trust), X-Real-IP is the client's address (a client's own is dropped). `behindProxy`: nginx in
 * front set X-Real-IP and Forwarded itself, and they are passed on as it set them.
 */
export function forwardedHeaders(req: IncomingRequest, via: { encrypted: boolean; behindProxy?: boolean }): string[] {
  const headers = passableRaw(req.rawHeaders, REPLACED);
  const given = req.headers;
  const host = String(given[':authority'] ?? given.host ?? '');
  const proto = via.encrypted ? 'https' : 'http';
  const client = req.socket.remoteAddress ?? '';
  // The port the client asked for (Host's, or the scheme's), not the listener's: a forwarded 443 says 443.
  const port = /:(\d+)$/.exec(host)?.[1] ?? (via.encrypted ? '443' : '80');
  headers.push(
    'host',
    host,
    'x-forwarded-for',
    append(given['x-forwarded-for'], client),
    'x-forwarded-port',
    append(given['x-forwarded-port'], port),
    'x-forwarded-proto',
    append(given['x-forwarded-proto'], proto),
    'x-forwarded-host',
    append(given['x-forwarded-host'], host),
  );
  if (via.behindProxy) {
    for (const name of ['x-real-ip', 'forwarded'])
      if (typeof given[name] === 'string') headers.push(name, given[name] as string);
  } else {
    const own = `for=${forwardedNode(client)};host=${quoted(host)};proto=${proto}`;
    headers.push('x-real-ip', client, 'forwarded', given.forwarded ? `${String(given.forwarded)}, ${own}` : own);
  }
  // A body-less DELETE or OPTIONS says so, or some servers wait for a body.
  if ((req.method === 'DELETE' || req.method === 'OPTIONS') && given['content-length'] === undefined)
    if (given['transfer-encoding'] === undefined && req.httpVersionMajor < 2) headers.push('content-length', '0');
  return headers;
}

/**
 * A request that carries no body: HTTP/1 without Content-Length or Transfer-Encoding (RFC 9112 §6.3), HTTP/2 whose
 * headers ended the stream, or one read already (a retry).
 */
export function hasNoBody(req: IncomingRequest): boolean {
  if (req.readableEnded) return true;
  if (req.httpVersionMajor >= 2) return (req as Http2ServerRequest).stream.endAfterHeaders;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
}
