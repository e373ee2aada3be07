/**
 * The router's HTTPS listener, driven by real TLS and HTTP/2 clients: certificates by SNI (a custom domain's, else the
 * apps domain's), HTTP/2 by ALPN forwarded to an HTTP/1.1 app, HTTP/1.1 over TLS, the HTTP→HTTPS redirect for names
 * with a certificate, and ACME http-01 answers on plain HTTP.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRouter } from '../src/router/router.js';
import type { RequestRecord, Router } from '../src/router/types.js';
import { appsDomainCertificate, createCertificateStore } from '../src/router/tls.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
const seen: Seen[] = [];
const records: RequestRecord[] = [];
let app: http.Server;
let router: Router;
let dir: string;

beforeAll(async () => {
  app = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'text/plain', connection: 'keep-alive' }).end(`hello ${body}`);
    });
  });
  app.listen(0, '127.0.0.1');
  await once(app, 'listening');
  const upstream = { host: '127.0.0.1', port: (app.address() as AddressInfo).port };

  dir = mkdtempSync(path.join(tmpdir(), 'slipway-router-tls-'));
  const certificates = createCertificateStore(await appsDomainCertificate({ appsDomain: 'localhost', dir }));
  const shop = await generate([{ name: 'commonName', value: 'shop.example' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'shop.example' }] }],
  });
  expect(certificates.set([{ name: 'shop.example', certPem: shop.cert, keyPem: shop.private }])).toEqual([]);
  router = await startRouter({
    host: '127.0.0.1',
    port: 0,
    https: { port: 0, certificates },
    acmeAnswer: async (token) => (token === 'good-token' ? 'good-token.thumbprint' : undefined),
    resolve: (host) =>
      host === 'app.localhost' || host === 'shop.example'
        ? { kind: 'instances', serviceId: 'srv-app', upstreams: [upstream] }
        : undefined,
    onRequest: (r) => records.push(r),
  });
});
afterAll(async () => {
  await router?.close();
  app?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The certificate the listener offers for `servername`, and the protocol ALPN settled on. */
function handshake(
  servername: string,
  alpn: string[],
): Promise<{ cert: tls.PeerCertificate; protocol: string | false }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      { host: '127.0.0.1', port: router.httpsPort!, servername, ALPNProtocols: alpn, rejectUnauthorized: false },
      () => {
        resolve({ cert: socket.getPeerCertificate(), protocol: socket.alpnProtocol ?? false });
        socket.end();
      },
    );
    socket.on('error', reject);
  });
}

function plain(
  host: string,
  urlPath: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: router.port, path: urlPath, headers: { host } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      })
      .on('error', reject);
  });
}

describe('the router over HTTPS', () => {
  it("offers a custom domain's own certificate by SNI, and the apps domain's to any other name", async () => {
    const shop = await handshake('shop.example', ['http/1.1']);
    expect(shop.cert.subject.CN).toBe('shop.example');
    const app = await handshake('app.localhost', ['http/1.1']);
    expect(app.cert.subjectaltname).toContain('DNS:*.localhost');
    expect((await handshake('unknown.example', ['http/1.1'])).cert.subject.CN).toBe('*.localhost');
  });

  it('speaks HTTP/2 by ALPN and forwards each stream to the app as HTTP/1.1', async () => {
    expect((await handshake('app.localhost', ['h2', 'http/1.1'])).protocol).toBe('h2');
    const session = http2.connect(`https://127.0.0.1:${router.httpsPort}`, {
      servername: 'app.localhost',
      rejectUnauthorized: false,
    });
    try {
      const ask = (method: string, body?: string) =>
        new Promise<{ status: number; text: string }>((resolve, reject) => {
          const stream = session.request({
            ':method': method,
            ':path': '/h2?x=1',
            ':authority': `app.localhost:${router.httpsPort}`,
          });
          let text = '';
          let status = 0;
          stream.on('response', (headers) => (status = Number(headers[':status'])));
          stream.on('data', (c: Buffer) => (text += c.toString()));
          stream.on('end', () => resolve({ status, text }));
          stream.on('error', reject);
          stream.end(body);
        });
      // Two streams at once on one connection, one with a body.
      const [get, post] = await Promise.all([ask('GET'), ask('POST', 'over h2')]);
      expect(get).toEqual({ status: 200, text: 'hello ' });
      expect(post).toEqual({ status: 200, text: 'hello over h2' });
      const got = seen.find((s) => s.method === 'POST' && s.url === '/h2?x=1')!;
      expect(got.body).toBe('over h2');
      expect(got.headers.host).toBe(`app.localhost:${router.httpsPort}`);
      expect(got.headers['x-forwarded-proto']).toBe('https');
      expect(Object.keys(got.headers).some((h) => h.startsWith(':'))).toBe(false);
      const record = records.find((r) => r.method === 'POST' && r.path === '/h2?x=1');
      expect(record).toMatchObject({ serviceId: 'srv-app', statusCode: 200, bytesOut: 'hello over h2'.length });
    } finally {
      session.close();
    }
  });

  it('speaks HTTP/1.1 over TLS to clients without HTTP/2', async () => {
    // A client without HTTP/2: it offers only http/1.1 by ALPN.
    const options: https.RequestOptions & { ALPNProtocols: string[] } = {
      host: '127.0.0.1',
      port: router.httpsPort,
      path: '/h1',
      servername: 'shop.example',
      ALPNProtocols: ['http/1.1'],
      headers: { host: 'shop.example' },
      rejectUnauthorized: false,
      agent: false,
    };
    const answer = await new Promise<{ status: number; text: string; protocol: string | false }>((resolve, reject) => {
      https
        .get(options, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              text,
              protocol: (res.socket as tls.TLSSocket).alpnProtocol ?? false,
            }),
          );
        })
        .on('error', reject);
    });
    expect(answer).toEqual({ status: 200, text: 'hello ', protocol: 'http/1.1' });
    expect(seen.find((s) => s.url === '/h1')!.headers['x-forwarded-proto']).toBe('https');
    // HTTP/1.1 counts what the connection carried for this response: status line, headers and body.
    const { bytesOut } = records.find((r) => r.path === '/h1')!;
    expect(bytesOut).toBeGreaterThan('HTTP/1.1 200 OK\r\n'.length + 'hello '.length);
    expect(bytesOut).toBeLessThan(1000);
  });

  it('redirects plain HTTP to HTTPS for a name with a certificate, except ACME answers', async () => {
    const redirected = await plain('shop.example', '/cart?id=2');
    expect([redirected.status, redirected.headers.location]).toEqual([
      301,
      `https://shop.example:${router.httpsPort}/cart?id=2`,
    ]);
    expect((await plain('app.localhost', '/')).status).toBe(200); // no certificate of its own: plain HTTP serves
    const answer = await plain('shop.example', '/.well-known/acme-challenge/good-token');
    expect([answer.status, answer.text]).toEqual([200, 'good-token.thumbprint']);
    // Not Slipway's token: the request goes on to the app, as any other.
    expect((await plain('app.localhost', '/.well-known/acme-challenge/other')).status).toBe(200);
    // Nor redirected on a name with a certificate: an ACME server validates over HTTP.
    expect((await plain('shop.example', '/.well-known/acme-challenge/other')).status).toBe(200);
    expect((await plain('shop.example', '/.well-known/acme-challenge/not.a.token')).status).toBe(200);
  });
});
