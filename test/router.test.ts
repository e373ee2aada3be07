import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createUpstreamPools, type UpstreamPools } from '../src/router/forward.js';
import { startRouter } from '../src/router/router.js';
import type { RequestRecord, RouteTarget, Router, Upstream } from '../src/router/types.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
interface TestUpstream extends Upstream {
  server: http.Server;
  seen: Seen[];
}

const upstreams: TestUpstream[] = [];

/** An app instance on a random port: answers `{ name }` after reading the body, unless `handler` takes over. */
async function startUpstream(name: string, handler?: http.RequestListener): Promise<TestUpstream> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (handler) return handler(req, res);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const upstream = { host: '127.0.0.1', port: (server.address() as AddressInfo).port, server, seen };
  upstreams.push(upstream);
  return upstream;
}

/** An upstream whose instance just stopped: nothing listens on its port, so connecting is refused. */
async function stoppedUpstream(): Promise<Upstream> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return { host: '127.0.0.1', port };
}

/** Minimal WebSocket echo on the upstream side: accept the handshake, unmask each (small, single-chunk) frame, send it back. */
function echoWebSockets(server: http.Server, onSocket?: (socket: net.Socket) => void): void {
  server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
    socket.on('error', () => {});
    socket.on('end', () => socket.end()); // http servers allow half-open sockets; close when the client does
    onSocket?.(socket);
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    socket.on('data', (frame: Buffer) => {
      const length = frame[1]! & 0x7f;
      const mask = frame.subarray(2, 6);
      const payload = frame.subarray(6, 6 + length).map((byte, i) => byte ^ mask[i % 4]!);
      socket.write(Buffer.concat([Buffer.from([0x81, length]), payload]));
    });
  });
}

/** A raw TCP client of `port` that keeps everything it receives, for speaking WebSocket by hand. */
function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  let received = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
  const closed = once(socket, 'close');
  const receivedWhen = (enough: (data: Buffer) => boolean) =>
    vi.waitFor(
      () => {
        if (!enough(received)) throw new Error(`still waiting, received: ${received.toString()}`);
        return received;
      },
      { timeout: 5000, interval: 5 },
    );
  return { socket, closed, receivedWhen };
}

function upgradeRequest(host: string): string {
  const key = randomBytes(16).toString('base64');
  return `GET /socket HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`;
}

function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  return Buffer.concat([
    Buffer.from([0x81, 0x80 | payload.length]),
    mask,
    payload.map((byte, i) => byte ^ mask[i % 4]!),
  ]);
}

/** Opens a WebSocket through the router and checks one echo round trip. */
async function webSocketEcho(port: number, host: string, text: string) {
  const connection = rawConnection(port);
  connection.socket.write(upgradeRequest(host));
  const handshake = await connection.receivedWhen((data) => data.includes('\r\n\r\n'));
  expect(handshake.toString()).toMatch(/^HTTP\/1\.1 101 /);
  const headEnd = handshake.indexOf('\r\n\r\n') + 4;
  connection.socket.write(maskedTextFrame(text));
  const data = await connection.receivedWhen((received) => received.length >= headEnd + 2 + text.length);
  expect(data.subarray(headEnd, headEnd + 2)).toEqual(Buffer.from([0x81, text.length]));
  expect(data.subarray(headEnd + 2).toString()).toBe(text);
  return connection;
}

const routes = new Map<string, RouteTarget | (() => RouteTarget)>();
const resolvedNames: string[] = [];
const records: RequestRecord[] = [];
let router: Router;

function request(
  urlPath: string,
  {
    host,
    method = 'GET',
    headers = {},
    body,
  }: { host: string; method?: string; headers?: http.OutgoingHttpHeaders; body?: string },
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: router.port, path: urlPath, method, headers: { host, ...headers }, agent: false },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const instances = (serviceId: string, list: Upstream[]): RouteTarget => ({
  kind: 'instances',
  serviceId,
  upstreams: list,
});
const nameOf = (body: string) => (JSON.parse(body) as { name: string }).name;

const siteDir = mkdtempSync(path.join(tmpdir(), 'slipway-router-'));

beforeAll(async () => {
  router = await startRouter({
    host: '127.0.0.1',
    port: 0,
    resolve(hostname) {
      resolvedNames.push(hostname);
      const route = routes.get(hostname);
      return typeof route === 'function' ? route() : route;
    },
    onRequest: (record) => records.push(record),
  });
});

afterAll(async () => {
  await router.close();
  for (const upstream of upstreams) upstream.server.closeAllConnections();
  await Promise.all(upstreams.map((upstream) => new Promise((resolve) => upstream.server.close(resolve))));
  rmSync(siteDir, { recursive: true, force: true });
});

describe('routing by Host', () => {
  it('routes on the Host header lowercased without its port, and keeps IPv6 brackets', async () => {
    const a = await startUpstream('a');
    routes.set('app-1.localhost', instances('svc-1', [a]));
    const res = await request('/hello?x=1', { host: 'App-1.Localhost:1234' });
    expect(res.status).toBe(200);
    expect(nameOf(res.body)).toBe('a');
    expect(a.seen.at(-1)?.url).toBe('/hello?x=1');
    expect(resolvedNames.at(-1)).toBe('app-1.localhost');
    expect((await request('/', { host: '[::1]:8080' })).status).toBe(404);
    expect(resolvedNames.at(-1)).toBe('[::1]');
  });

  it('answers an unknown host with a 404 page naming the host, HTML-escaped', async () => {
    const res = await request('/', { host: '<b>nobody</b>.localhost' });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/no service at this address/i);
    expect(res.body).toContain('&#60;b&#62;nobody&#60;/b&#62;.localhost');
    expect(res.body).not.toContain('<b>nobody');
  });

  it('answers 503 pages for a service with no live deploy (Retry-After) and a suspended one', async () => {
    routes.set('idle.localhost', instances('svc-idle', []));
    routes.set('paused.localhost', { kind: 'suspended', serviceId: 'svc-paused' });
    const idle = await request('/', { host: 'idle.localhost' });
    expect([idle.status, idle.headers['retry-after']]).toEqual([503, '5']);
    expect(idle.body).toMatch(/no live deploy/i);
    const paused = await request('/', { host: 'paused.localhost' });
    expect(paused.status).toBe(503);
    expect(paused.body).toMatch(/suspended/i);
    expect(paused.body).toContain('paused.localhost');
  });

  it('passes the original Host and sets X-Forwarded-For/Proto/Host/Port for the app', async () => {
    const a = await startUpstream('a');
    routes.set('fwd.localhost', instances('svc-fwd', [a]));
    expect((await request('/', { host: 'fwd.localhost:8080' })).status).toBe(200);
    expect(a.seen[0]?.headers).toMatchObject({
      host: 'fwd.localhost:8080',
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'fwd.localhost:8080',
      'x-forwarded-port': '8080',
    });
  });

  // Issue 29: a client's X-Real-IP and Forwarded reached apps as it sent them.
  it('sets X-Real-IP to the client address and adds its own element to Forwarded, as to X-Forwarded-For', async () => {
    const a = await startUpstream('a');
    routes.set('real-ip.localhost', instances('svc-real-ip', [a]));
    const spoofed = { 'x-real-ip': '6.6.6.6', forwarded: 'for=6.6.6.6;proto=https', 'x-forwarded-for': '6.6.6.6' };
    expect((await request('/', { host: 'real-ip.localhost:8080', headers: spoofed })).status).toBe(200);
    expect(a.seen[0]?.headers).toMatchObject({
      'x-real-ip': '127.0.0.1',
      forwarded: 'for=6.6.6.6;proto=https, for=127.0.0.1;host="real-ip.localhost:8080";proto=http',
      'x-forwarded-for': '6.6.6.6,127.0.0.1',
    });
    expect((await request('/', { host: 'real-ip.localhost' })).status).toBe(200);
    expect(a.seen[1]?.headers).toMatchObject({
      'x-real-ip': '127.0.0.1',
      forwarded: 'for=127.0.0.1;host="real-ip.localhost";proto=http',
    });
  });

  it('drops the headers a Connection header names, both ways, however many it names', async () => {
    const app = await startUpstream('hop', (_req, res) => {
      res.writeHead(200, { connection: 'x-app-hop', 'x-app-hop': 'private', 'x-app-kept': 'yes' }).end('ok');
    });
    routes.set('hop.localhost', instances('svc-hop', [app]));
    // A hostile client names thousands of headers in Connection, and sends hundreds.
    const many = Array.from({ length: 1200 }, (_, i) => `x-n${i}`).join(', ');
    const extra = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x-h${i}`, 'v']));
    const res = await request('/', {
      host: 'hop.localhost',
      headers: { connection: `keep-alive, x-client-hop, ${many}`, 'x-client-hop': 'private', 'x-n7': 'x', ...extra },
    });
    expect(res.status).toBe(200);
    expect(res.headers['x-app-hop']).toBeUndefined();
    expect(res.headers['x-app-kept']).toBe('yes');
    const seen = app.seen[0]!.headers;
    expect([seen['x-client-hop'], seen['x-n7'], seen['x-h99']]).toEqual([undefined, undefined, 'v']);
  });

  it('answers Expect: 100-continue itself and passes the body on without it (the app gets a whole request)', async () => {
    const a = await startUpstream('a');
    routes.set('expect.localhost', instances('svc-expect', [a]));
    const headers = { expect: '100-continue', 'content-length': '5' };
    const res = await request('/upload', { host: 'expect.localhost', method: 'PUT', headers, body: 'hello' });
    expect(res.status).toBe(200);
    expect(a.seen[0]).toMatchObject({ method: 'PUT', body: 'hello' });
    expect(a.seen[0]?.headers.expect).toBeUndefined();
  });
});

/** Sends `lines` as one raw HTTP request (Connection: close) and returns the status line's code and the whole reply. */
async function rawRequest(lines: string[]): Promise<{ status: number; text: string }> {
  const connection = rawConnection(router.port);
  connection.socket.write(`${[...lines, 'Connection: close'].join('\r\n')}\r\n\r\n`);
  await connection.closed;
  const text = (await connection.receivedWhen(() => true)).toString();
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0), text };
}

// Issue 29: `GET http://b.localhost/…` with `Host: a.localhost` went to B with `Host: a.localhost`.
describe('absolute-form request targets (RFC 9112 §3.2.2)', () => {
  it('refuses one whose Host names another host with 400; neither app hears of it', async () => {
    const [a, b] = [await startUpstream('abs-a'), await startUpstream('abs-b')];
    routes.set('abs-a.localhost', instances('svc-abs-a', [a]));
    routes.set('abs-b.localhost', instances('svc-abs-b', [b]));
    for (const target of ['http://abs-b.localhost/x', 'http://abs-b.localhost:8080/x', 'http://nobody.localhost/x']) {
      const res = await rawRequest([`GET ${target} HTTP/1.1`, 'Host: abs-a.localhost']);
      expect(res.status, target).toBe(400);
    }
    const upgrade = await rawRequest([
      'GET http://abs-b.localhost/socket HTTP/1.1',
      'Host: abs-a.localhost',
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
    ]);
    expect(upgrade.status).toBe(400);
    expect([a.seen, b.seen]).toEqual([[], []]);
  });

  it('routes one whose Host agrees, passing the app the origin form and the Host as sent', async () => {
    const b = await startUpstream('abs-ok');
    routes.set('abs-ok.localhost', instances('svc-abs-ok', [b]));
    const res = await rawRequest(['GET http://ABS-OK.localhost:8080/x?y=1 HTTP/1.1', 'Host: abs-ok.localhost:8080']);
    expect(res.status).toBe(200);
    expect(b.seen[0]).toMatchObject({ url: '/x?y=1', headers: { host: 'abs-ok.localhost:8080' } });
    // HTTP/1.0 may leave Host out: the target's authority is the host, and the app is told it.
    const old = await rawRequest(['GET http://abs-ok.localhost/ HTTP/1.0']);
    expect(old.status).toBe(200);
    expect(b.seen[1]).toMatchObject({ url: '/', headers: { host: 'abs-ok.localhost' } });
  });
});

describe('load balancing and failures', () => {
  it('spreads requests round robin across the instances of a service', async () => {
    const three = await Promise.all(['a', 'b', 'c'].map((name) => startUpstream(name)));
    routes.set('rr.localhost', instances('svc-rr', three));
    const names: string[] = [];
    for (let i = 0; i < 30; i++) names.push(nameOf((await request('/', { host: 'rr.localhost' })).body));
    expect(['a', 'b', 'c'].map((name) => names.filter((n) => n === name).length)).toEqual([10, 10, 10]);
  });

  it('keeps connections to an app alive across requests, whatever Keep-Alive timeout the app announces', async () => {
    for (const keepAliveSeconds of [1, 2, 5]) {
      const app = await startUpstream(`ka-${keepAliveSeconds}`);
      app.server.keepAliveTimeout = keepAliveSeconds * 1000; // sent to the router as Keep-Alive: timeout=N
      let connections = 0;
      app.server.on('connection', () => connections++);
      routes.set(`ka${keepAliveSeconds}.localhost`, instances(`svc-ka-${keepAliveSeconds}`, [app]));
      for (let round = 0; round < 20; round++) {
        const batch = Array.from({ length: 10 }, () => request('/', { host: `ka${keepAliveSeconds}.localhost` }));
        expect((await Promise.all(batch)).map((res) => res.status)).toEqual(Array(10).fill(200));
      }
      // 200 requests, 10 at a time: 10 connections at most, not one per request.
      expect(connections).toBeLessThanOrEqual(10);
    }
  });

  it('drops the connection pool of an address once nothing is connected to it (every deploy brings new addresses)', async () => {
    const pools = createUpstreamPools(5000);
    const get = (pools: UpstreamPools, upstream: Upstream) =>
      new Promise<number>((resolve) => {
        let status = 0;
        pools.poolFor(upstream).dispatch(
          { path: '/', method: 'GET', headers: ['host', 'pool.localhost'], body: null },
          {
            onConnect: () => undefined,
            onHeaders: (code) => ((status = code), true),
            onData: () => true,
            onComplete: () => resolve(status),
            onError: () => resolve(0),
          },
        );
      });
    try {
      const app = await startUpstream('pooled');
      app.server.keepAliveTimeout = 1000; // the pool closes its idle connection half a second before the app would
      expect(await get(pools, app)).toBe(200);
      expect(pools.size()).toBe(1);
      await vi.waitFor(() => expect(pools.size()).toBe(0), { timeout: 5000 });
      expect(await get(pools, await stoppedUpstream())).toBe(0); // refused: no connection ever
      await vi.waitFor(() => expect(pools.size()).toBe(0));
      expect(await get(pools, app)).toBe(200); // a dropped address gets a new pool
    } finally {
      await pools.close();
    }
  });

  it('retries a body-less request once on another instance when one refuses connections', async () => {
    const stopped = await stoppedUpstream();
    const live = await startUpstream('live');
    routes.set('retry.localhost', instances('svc-retry', [stopped, live]));
    const statuses = await Promise.all(
      Array.from({ length: 50 }, () => request('/', { host: 'retry.localhost' }).then((res) => res.status)),
    );
    expect(statuses).toEqual(Array(50).fill(200));
    expect(live.seen).toHaveLength(50);
    // A retry must not forward the client's address twice.
    expect(live.seen.map((s) => s.headers['x-forwarded-for'])).toEqual(Array(50).fill('127.0.0.1'));
  });

  it('retries from a fresh resolve(), so a request racing a deploy reaches the new instance', async () => {
    const stopped = await stoppedUpstream();
    const replacement = await startUpstream('new');
    let calls = 0;
    routes.set('swap.localhost', () => instances('svc-swap', calls++ % 2 === 0 ? [stopped] : [replacement]));
    for (let i = 0; i < 5; i++)
      expect((await request('/', { host: 'swap.localhost', method: 'DELETE' })).status).toBe(200);
    expect(replacement.seen.map((s) => s.method)).toEqual(Array(5).fill('DELETE'));
  });

  it('answers 502 (and stays up) for a request with a body it cannot replay', async () => {
    const stopped = await stoppedUpstream();
    const live = await startUpstream('live');
    routes.set('post.localhost', instances('svc-post', [stopped, live]));
    const results = [];
    for (let i = 0; i < 4; i++)
      results.push(await request('/submit', { host: 'post.localhost', method: 'POST', body: 'payload' }));
    expect(results.map((res) => res.status).sort()).toEqual([200, 200, 502, 502]);
    expect(results.find((res) => res.status === 502)?.body).toMatch(/did not answer/);
    expect(live.seen.map((s) => s.body)).toEqual(['payload', 'payload']);
    expect((await request('/', { host: 'post.localhost' })).status).toBe(200);
  });

  it('cuts the client off when an instance dies mid-response instead of leaving it hanging', async () => {
    const dying = await startUpstream('dying', (_req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('partial');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    routes.set('dying.localhost', instances('svc-dying', [dying]));
    await expect(request('/', { host: 'dying.localhost' })).rejects.toThrow(/aborted|socket hang up|ECONNRESET/);
  });

  it('survives clients that leave before or during a response, and cancels the upstream request', async () => {
    const upstreamClosed: Promise<unknown>[] = [];
    const slow = await startUpstream('slow', (req, res) => {
      upstreamClosed.push(once(res, 'close'));
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('tick\n'), 10);
        res.on('close', () => clearInterval(timer));
      } else if (req.url !== '/hang') {
        res.end('ok'); // '/hang' never answers
      }
    });
    routes.set('slow.localhost', instances('svc-slow', [slow]));

    const midResponse = http.get({
      host: '127.0.0.1',
      port: router.port,
      path: '/stream',
      headers: { host: 'slow.localhost' },
      agent: false,
    });
    midResponse.on('error', () => {});
    midResponse.on('response', (res) => res.once('data', () => midResponse.destroy()));
    const beforeResponse = http.get({
      host: '127.0.0.1',
      port: router.port,
      path: '/hang',
      headers: { host: 'slow.localhost' },
      agent: false,
    });
    beforeResponse.on('error', () => {});
    await vi.waitFor(() => expect(upstreamClosed).toHaveLength(2));
    beforeResponse.destroy();

    await Promise.all(upstreamClosed);
    await vi.waitFor(() =>
      expect(
        records
          .filter((r) => r.serviceId === 'svc-slow')
          .map((r) => [r.path, r.statusCode])
          .sort(),
      ).toEqual([
        ['/hang', 499],
        ['/stream', 200],
      ]),
    );
    expect((await request('/', { host: 'slow.localhost' })).status).toBe(200);
  });
});

describe('WebSockets', () => {
  it('proxies an upgrade to an instance and echoes frames both ways', async () => {
    const ws = await startUpstream('ws');
    echoWebSockets(ws.server);
    routes.set('ws.localhost', instances('svc-ws', [ws]));
    const connection = await webSocketEcho(router.port, 'ws.localhost', 'hello through the router');
    connection.socket.end();
    await connection.closed;
  });

  it('passes back the answer of an app that declines the upgrade, and tells the app who asked', async () => {
    const app = await startUpstream('declines', (_req, res) =>
      res.writeHead(426, { 'content-type': 'text/plain' }).end('no sockets here'),
    );
    routes.set('ws-declined.localhost', instances('svc-ws-declined', [app]));
    const connection = rawConnection(router.port);
    connection.socket.write(upgradeRequest('ws-declined.localhost'));
    await connection.closed;
    const response = (await connection.receivedWhen(() => true)).toString();
    expect(response).toMatch(/^HTTP\/1\.1 426 /);
    expect(response).toMatch(/\r\n\r\nno sockets here$/);
    expect(app.seen[0]?.headers).toMatchObject({ upgrade: 'websocket', 'x-forwarded-for': '127.0.0.1' });
    await new Promise((resolve) => setTimeout(resolve, 50)); // the record is reported when the socket closes
    expect(records.filter((r) => r.serviceId === 'svc-ws-declined').map((r) => r.statusCode)).toEqual([426]);
  });

  it('passes back a chunked refusal with its body decoded and delimited by the close, not mislabelled chunked', async () => {
    const app = await startUpstream('declines-chunked', (_req, res) => {
      res.writeHead(403, { 'content-type': 'text/plain' }); // no length: Node sends it chunked
      res.write('part one, ');
      res.end('part two');
    });
    routes.set('ws-chunked.localhost', instances('svc-ws-chunked', [app]));
    const connection = rawConnection(router.port);
    connection.socket.write(upgradeRequest('ws-chunked.localhost'));
    await connection.closed;
    const response = (await connection.receivedWhen(() => true)).toString();
    const [headers, body] = response.split('\r\n\r\n');
    expect(headers).toMatch(/^HTTP\/1\.1 403 /);
    expect(headers).not.toMatch(/transfer-encoding/i);
    expect(headers).toMatch(/\r\nConnection: close$/);
    expect(body).toBe('part one, part two');
  });

  it.each([
    ['unknown.localhost', 404],
    ['paused.localhost', 503],
    ['idle.localhost', 503],
    ['ws-stopped.localhost', 502],
  ])('answers an upgrade for %s with a plain HTTP %i and closes', async (host, status) => {
    routes.set('idle.localhost', instances('svc-idle', []));
    routes.set('paused.localhost', { kind: 'suspended', serviceId: 'svc-paused' });
    routes.set('ws-stopped.localhost', instances('svc-ws-stopped', [await stoppedUpstream()]));
    const connection = rawConnection(router.port);
    connection.socket.write(upgradeRequest(host));
    await connection.closed;
    const response = (await connection.receivedWhen(() => true)).toString();
    expect(response).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(response).toMatch(/\r\ncontent-length: \d+\r\n/i);
  });
});

describe('static sites', () => {
  const site = path.join(siteDir, 'site');
  beforeAll(() => {
    writeFileSync(path.join(siteDir, 'secret.txt'), 'TOP-SECRET');
    mkdirSync(path.join(siteDir, 'site-private'));
    writeFileSync(path.join(siteDir, 'site-private', 'key.txt'), 'TOP-SECRET');
    mkdirSync(path.join(site, 'css'), { recursive: true });
    mkdirSync(path.join(site, 'docs'));
    mkdirSync(path.join(siteDir, 'bare'));
    writeFileSync(path.join(site, 'index.html'), '<h1>home</h1>');
    writeFileSync(path.join(site, 'css', 'site.css'), 'body { color: red }');
    writeFileSync(path.join(site, 'docs', 'index.html'), '<h1>docs</h1>');
    writeFileSync(path.join(site, '404.html'), '<h1>custom not found</h1>');
    writeFileSync(path.join(siteDir, 'bare', 'index.html'), 'bare');
    symlinkSync(path.join(siteDir, 'secret.txt'), path.join(site, 'leak.txt'));
    symlinkSync(siteDir, path.join(site, 'outside'));
    symlinkSync('index.html', path.join(site, 'alias.html'));
    routes.set('site.localhost', { kind: 'static', serviceId: 'svc-site', root: site });
    routes.set('bare.localhost', { kind: 'static', serviceId: 'svc-bare', root: path.join(siteDir, 'bare') });
  });
  const get = (urlPath: string, options: { method?: string; headers?: http.OutgoingHttpHeaders } = {}) =>
    request(urlPath, { host: 'site.localhost', ...options });

  it('serves index.html for / and directories, and nested files with their content type', async () => {
    const home = await get('/');
    expect([home.status, home.body, home.headers['content-type']]).toEqual([
      200,
      '<h1>home</h1>',
      'text/html; charset=utf-8',
    ]);
    expect(home.headers['content-length']).toBe('13');
    expect(home.headers['last-modified']).toMatch(/GMT$/);
    expect((await get('/docs/')).body).toBe('<h1>docs</h1>');
    // A directory without its slash redirects, so the page's relative links resolve inside it (issue 13).
    const bare = await get('/docs');
    expect([bare.status, bare.headers.location]).toEqual([301, '/docs/']);
    expect((await get('/alias.html')).body).toBe('<h1>home</h1>');
    const css = await get('/css/site.css?v=2');
    expect([css.status, css.headers['content-type'], css.body]).toEqual([
      200,
      'text/css; charset=utf-8',
      'body { color: red }',
    ]);
  });

  it('answers a missing file with the site 404.html, or the router 404 page without one', async () => {
    const custom = await get('/nope.html');
    expect([custom.status, custom.body]).toEqual([404, '<h1>custom not found</h1>']);
    const plain = await request('/nope.html', { host: 'bare.localhost' });
    expect(plain.status).toBe(404);
    expect(plain.body).toMatch(/not found/i);
  });

  it.each([
    '/../secret.txt',
    '/%2e%2e/secret.txt',
    '/..%2fsecret.txt',
    '/css/../../secret.txt',
    '/../site-private/key.txt',
    '/leak.txt',
    '/outside/secret.txt',
    '/%00index.html',
    '/index.html%00.txt',
  ])('refuses %s without leaking anything outside the root', async (urlPath) => {
    const res = await get(urlPath);
    expect([400, 404]).toContain(res.status);
    expect(res.body).not.toContain('TOP-SECRET');
  });

  it('answers HEAD with headers only, and a matching If-None-Match with 304', async () => {
    const head = await get('/css/site.css', { method: 'HEAD' });
    expect([head.status, head.body, head.headers['content-length']]).toEqual([200, '', '19']);
    const etag = head.headers.etag;
    expect(etag).toMatch(/^W\/".+"$/);
    const notModified = await get('/css/site.css', { headers: { 'if-none-match': `"other", ${etag}` } });
    expect([notModified.status, notModified.body]).toEqual([304, '']);
    expect((await get('/css/site.css', { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
  });

  it('refuses methods other than GET and HEAD with 405', async () => {
    const res = await get('/', { method: 'POST' });
    expect([res.status, res.headers.allow]).toEqual([405, 'GET, HEAD']);
  });
});

describe('request records', () => {
  it('reports each finished request once: proxied, static and router pages alike', async () => {
    const a = await startUpstream('a');
    routes.set('rec.localhost', instances('svc-rec', [a]));
    routes.set('rec-site.localhost', { kind: 'static', serviceId: 'svc-rec-site', root: path.join(siteDir, 'bare') });
    routes.set('rec-paused.localhost', { kind: 'suspended', serviceId: 'svc-rec-paused' });
    await request('/nobody', { host: 'rec-nobody.localhost' });
    const proxied = await request('/api?q=1', { host: 'rec.localhost:8080', method: 'DELETE' });
    await request('/index.html', { host: 'rec-site.localhost' });
    await request('/', { host: 'rec-paused.localhost' });

    const byService = (serviceId: string) => records.filter((r) => r.serviceId === serviceId);
    await vi.waitFor(() =>
      expect(['svc-rec', 'svc-rec-site', 'svc-rec-paused'].map((id) => byService(id).length)).toEqual([1, 1, 1]),
    );
    expect(byService('svc-rec')[0]).toEqual({
      serviceId: 'svc-rec',
      method: 'DELETE',
      path: '/api?q=1',
      host: 'rec.localhost',
      statusCode: 200,
      durationMs: expect.any(Number),
      bytesOut: expect.any(Number),
      upstream: `127.0.0.1:${a.port}`,
    });
    // bytesOut counts what went over the wire: status line and headers as well as the body.
    expect(byService('svc-rec')[0]!.bytesOut).toBeGreaterThan(proxied.body.length + 50);
    expect(byService('svc-rec-site')[0]).toMatchObject({ statusCode: 200, bytesOut: expect.any(Number) });
    expect(byService('svc-rec-site')[0]!.bytesOut).toBeGreaterThan('bare'.length);
    expect(byService('svc-rec-paused')[0]).toMatchObject({ statusCode: 503 });
    expect(byService('svc-rec-paused')[0]).not.toHaveProperty('upstream');
    // A host no service claims has nobody to bill.
    expect(records.some((r) => r.host === 'rec-nobody.localhost')).toBe(false);
  });
});

describe('close()', () => {
  it('resolves promptly with keep-alive, in-flight and WebSocket connections open, and drops them', async () => {
    const upstreamSockets: net.Socket[] = [];
    const app = await startUpstream('app', (req, res) => {
      if (req.url !== '/hang') res.end('ok');
    });
    echoWebSockets(app.server, (socket) => upstreamSockets.push(socket));
    const ownRouter = await startRouter({ host: '127.0.0.1', port: 0, resolve: () => instances('svc-close', [app]) });

    const keepAlive = new http.Agent({ keepAlive: true });
    await new Promise((resolve) =>
      http.get({ port: ownRouter.port, host: '127.0.0.1', agent: keepAlive, headers: { host: 'x.localhost' } }, (res) =>
        res.resume().on('end', resolve),
      ),
    );
    const hanging = http.get({
      port: ownRouter.port,
      host: '127.0.0.1',
      path: '/hang',
      headers: { host: 'x.localhost' },
    });
    const hangingFailed = once(hanging, 'error');
    const ws = await webSocketEcho(ownRouter.port, 'x.localhost', 'before close');
    await vi.waitFor(() => expect(app.seen.map((s) => s.url)).toContain('/hang'));

    const startedAt = Date.now();
    await ownRouter.close();
    expect(Date.now() - startedAt).toBeLessThan(1000);
    await Promise.all([
      ws.closed,
      hangingFailed,
      ...upstreamSockets.map((socket) => (socket.destroyed ? undefined : once(socket, 'close'))),
    ]);
    keepAlive.destroy();
  });
});
