/**
 * Slow clients and hung apps: the API and the router cut connections whose headers trickle in
 * (slowloris) and requests whose bodies never end, and the router answers 504 for an app that
 * never answers; a WebSocket log stream outlives all of these deadlines.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { nginxBinary, nginxLuaModules } from '../src/router/nginx/process.js';
import { startRouter } from '../src/router/router.js';
import type { Router } from '../src/router/types.js';
import { createApiKey, signUp } from './helpers/client.js';
import { sleep } from './helpers/process.js';
import { useServer } from './helpers/server.js';

const HEADERS_TIMEOUT_S = 1;
const REQUEST_TIMEOUT_S = 2;
const t = useServer({
  SLIPWAY_HEADERS_TIMEOUT_SECONDS: String(HEADERS_TIMEOUT_S),
  SLIPWAY_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S),
});
const apiPort = () => Number(new URL(t.server.url).port);

/**
 * Opens a raw connection, writes `start`, then one more byte of `trickle` per `everyMs` until the
 * server closes it (or `giveUpMs` passes); resolves with when it closed and what it answered.
 */
function trickle(
  port: number,
  start: string,
  drip: string,
  everyMs: number,
  giveUpMs = 10_000,
): Promise<{ closedAfterMs: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const began = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`still connected after ${giveUpMs} ms; answered: ${JSON.stringify(answer)}`));
    }, giveUpMs);
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
    socket.on('error', () => undefined); // a reset is a close too
    socket.once('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ closedAfterMs: performance.now() - began, answer });
    });
    socket.once('connect', () => {
      socket.write(start);
      timer = setInterval(() => socket.writable && socket.write(drip[sent++ % drip.length]!), everyMs);
    });
  });
}

describe('the API', () => {
  it(`disconnects a client that sends one header byte per 300 ms after the ${HEADERS_TIMEOUT_S} s headers timeout`, async () => {
    const { closedAfterMs, answer } = await trickle(
      apiPort(),
      'GET /api/health HTTP/1.1\r\nHost: x\r\n',
      'X-Slow: aaaaaaaaaaaaaaaaaaaa',
      300,
    );
    expect(closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_S * 1000 - 50);
    expect(closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_S * 1000 + 1500);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('"code":"bad_request"'); // the usual error shape, with a request id
  });

  it(`disconnects a request whose body never ends after the ${REQUEST_TIMEOUT_S} s request timeout`, async () => {
    const head =
      'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"email":';
    const { closedAfterMs, answer } = await trickle(apiPort(), head, ' ', 300);
    expect(closedAfterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_S * 1000 - 50);
    expect(closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_S * 1000 + 1500);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('keeps a WebSocket log stream open past every deadline', async () => {
    const owner = await signUp(t.api);
    const key = await createApiKey(t.api, owner);
    const ws = new WebSocket(`${t.server.url.replace('http', 'ws')}/v1/logs/subscribe`, {
      headers: { authorization: `Bearer ${key.token}` },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => ws.once('close', resolve));
    await sleep((REQUEST_TIMEOUT_S + 1.5) * 1000);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
    expect(await closed).toBe(1005);
  });
});

// Both data planes where this machine has nginx: they cut the same clients, and differ only in the goodbye.
const routers = ['node', ...(nginxBinary() && nginxLuaModules() ? ['nginx'] : [])];
describe.each(routers)('the router (%s)', (kind) => {
  const r = useServer({
    SLIPWAY_ROUTER: kind,
    SLIPWAY_HEADERS_TIMEOUT_SECONDS: String(HEADERS_TIMEOUT_S),
    SLIPWAY_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S),
  });
  it(`disconnects a client that sends one header byte per 300 ms after the ${HEADERS_TIMEOUT_S} s headers timeout`, async () => {
    expect((await r.api.get('/status')).body.router.kind).toBe(kind);
    const port = r.server.slipway.routerPort;
    const { closedAfterMs, answer } = await trickle(
      port,
      'GET / HTTP/1.1\r\nHost: nothing.localhost\r\n',
      'X-Slow: aaaaaaaaaaaaaaaaaaaa',
      300,
    );
    expect(closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_S * 1000 - 50);
    expect(closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_S * 1000 + 1500);
    // The Node router answers 408; nginx closes without a word (client_header_timeout), as it does everywhere.
    if (kind === 'node') expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    else expect(answer).toBe('');
  });

  it(`disconnects a request whose body never ends after the ${REQUEST_TIMEOUT_S} s request timeout`, async () => {
    const head = 'POST / HTTP/1.1\r\nHost: nothing.localhost\r\nContent-Length: 1000\r\n\r\nabc';
    const { closedAfterMs } = await trickle(r.server.slipway.routerPort, head, ' ', 300);
    expect(closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_S * 1000 + 1500);
  });
});

describe('the router in front of a hung app', () => {
  let upstream: http.Server;
  let router: Router;
  const UPSTREAM_TIMEOUT_MS = 500;
  beforeAll(async () => {
    // Answers /fast at once, /slow after 3 s, and /stall sends its headers and then nothing.
    upstream = http.createServer((req, res) => {
      if (req.url === '/fast') return res.end('fast');
      if (req.url === '/stall') return res.writeHead(200, { 'content-type': 'text/plain' }).write('a bit');
      setTimeout(() => res.end('slow'), 3000).unref();
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const target = {
      kind: 'instances' as const,
      serviceId: 'srv-hung',
      upstreams: [{ host: '127.0.0.1', port: (upstream.address() as AddressInfo).port }],
    };
    router = await startRouter({
      host: '127.0.0.1',
      port: 0,
      resolve: () => target,
      timeouts: {
        headersTimeoutMs: 5000,
        requestTimeoutMs: 10_000,
        keepAliveTimeoutMs: 5000,
        upstreamTimeoutMs: UPSTREAM_TIMEOUT_MS,
      },
    });
  });
  afterAll(async () => {
    await router?.close();
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
  });
  const get = (path: string) =>
    new Promise<{ status: number; type: string; text: string; ms: number; complete: boolean }>((resolve, reject) => {
      const began = performance.now();
      http
        .get({ host: '127.0.0.1', port: router.port, path, headers: { host: 'hung.localhost' } }, (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => (text += c));
          res.on('error', () => undefined);
          res.once('close', () =>
            resolve({
              status: res.statusCode ?? 0,
              type: String(res.headers['content-type']),
              text,
              ms: performance.now() - began,
              complete: res.complete,
            }),
          );
        })
        .on('error', reject);
    });

  it('answers 504 in its page style when the app sends nothing within the upstream timeout, and never retries', async () => {
    const slow = await get('/slow');
    expect(slow.status).toBe(504);
    expect(slow.type).toMatch(/^text\/html/);
    expect(slow.text).toContain('Gateway timeout');
    expect(slow.ms).toBeGreaterThanOrEqual(UPSTREAM_TIMEOUT_MS - 20);
    expect(slow.ms).toBeLessThan(UPSTREAM_TIMEOUT_MS + 1000);
    expect(await get('/fast')).toMatchObject({ status: 200, text: 'fast' });
  });

  it('cuts off a response the app stopped sending, rather than leaving the client waiting', async () => {
    const stalled = await get('/stall');
    expect(stalled).toMatchObject({ status: 200, complete: false });
    expect(stalled.ms).toBeLessThan(UPSTREAM_TIMEOUT_MS + 1000);
  });
});
