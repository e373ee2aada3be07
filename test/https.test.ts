/**
 * Automatic HTTPS against a real ACME server (pebble) and a real DNS server (pebble-challtestsrv): a verified custom
 * domain gets a certificate through http-01 on the router's HTTP port, the HTTPS listener serves it by SNI (checked by
 * a TLS client against pebble's root), HTTP redirects to HTTPS, it is renewed, and it survives kill -9.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasPebble, startPebble, type TestAcme } from './helpers/acme.js';
import { deployFixture } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { proveOwnership, startTestDns, type TestDns } from './helpers/dns.js';
import { freePort, waitFor, type SlipwayProcess } from './helpers/process.js';
import { useRestartableSlipway } from './helpers/restartable.js';
import { nginxBinary, nginxFiles, runningMaster } from '../src/router/nginx/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  serial?: string;
}
/** One request to 127.0.0.1:`port`, as for `host` (SNI too over HTTPS, the chain checked against `ca`). */
function request(scheme: 'http' | 'https', port: number, host: string, urlPath = '/', ca?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port, path: urlPath, headers: { host: `${host}:${port}` }, agent: false };
    const done = (res: http.IncomingMessage) => {
      const serial = scheme === 'https' ? (res.socket as TLSSocket).getPeerCertificate().serialNumber : undefined;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString(), serial }),
      );
    };
    const req =
      scheme === 'https' ? https.request({ ...options, servername: host, ca }, done) : http.request(options, done);
    req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

/** nginx has finished its last reload: its master has one worker again, the new one (nothing for the Node router). */
async function reloadOver(proc: SlipwayProcess): Promise<void> {
  const dataDir = /"dataDir":"([^"]+)"/.exec(proc.stdout())?.[1];
  const master = dataDir && runningMaster(nginxFiles(dataDir));
  if (!master) return;
  const workers = () => readFileSync(`/proc/${master}/task/${master}/children`, 'utf8').trim().split(/\s+/).length;
  await waitFor('nginx to finish its reload', async () => workers() === 1, 10_000);
}

const unique = () => `shop-${randomBytes(4).toString('hex')}.com`;
const VALIDITY_SECONDS = 30; // renewed at two thirds: 20 s after issuance
// Both data planes: the Node router, and nginx in front of it (SLIPWAY_ROUTER=nginx) where nginx is installed.
const ROUTERS = ['node', ...(nginxBinary() ? ['nginx'] : [])];

for (const router of ROUTERS)
  describe.skipIf(!hasPebble())(`automatic HTTPS for custom domains (${router} router)`, () => {
    let dns: TestDns;
    let acme: TestAcme;
    let root: string;
    const ports = { http: 0, https: 0 };
    const env: Record<string, string> = {};
    const slipway = useRestartableSlipway(env);
    let current: Awaited<ReturnType<typeof slipway.start>> | undefined;

    beforeAll(async () => {
      dns = await startTestDns();
      [ports.http, ports.https] = [await freePort(), await freePort()];
      acme = await startPebble({ dnsServer: dns.server, httpPort: ports.http, validitySeconds: VALIDITY_SECONDS });
      root = await acme.issuingRoot();
      Object.assign(env, {
        SLIPWAY_ROUTER_PORT: String(ports.http),
        SLIPWAY_ROUTER_HTTPS_PORT: String(ports.https),
        SLIPWAY_DNS_SERVERS: dns.server,
        SLIPWAY_ROUTER_PUBLIC_IPS: '127.0.0.1,127.0.0.2',
        SLIPWAY_DOMAIN_CHECK_MS: '200',
        SLIPWAY_DOMAIN_RETRY_MS: '300',
        SLIPWAY_ACME_DIRECTORY_URL: acme.directoryUrl,
        SLIPWAY_ACME_CA_BUNDLE: acme.caBundleFile,
        SLIPWAY_ACME_EMAIL: 'ops@example.com',
        SLIPWAY_ROUTER: router,
      });
    });
    afterAll(async () => {
      await acme?.close();
      await dns?.close();
    });

    const eventsOf = async (api: Client, owner: TestUser, serviceId: string) =>
      (await api.get(`/v1/services/${serviceId}/events?limit=100&includeSlipwayEvents=true`, owner)).body.map(
        (e: { event: { type: string; details: Record<string, unknown> } }) => e.event,
      );

    it('issues, serves by SNI, redirects HTTP, renews, survives kill -9, and stops serving on delete', async () => {
      let { proc, api } = (current = await slipway.start());
      const owner = await signUp(api);
      const { service } = await deployFixture(api, owner, 'node-web');
      const name = unique();
      await dns.addA(name, ['127.0.0.1']);

      const added = Date.now();
      const domain = await api.post(`/v1/services/${service.id}/custom-domains`, { name }, owner);
      expect(domain.status).toBe(201);
      expect(domain.body[0].certificate).toEqual({ status: 'none' }); // not ordered before the domain is verified
      await proveOwnership(dns, domain.body[0]); // the TXT record the body asks for
      expect((await api.post(`/v1/services/${service.id}/custom-domains/${name}/verify`, {}, owner)).status).toBe(202);
      let first: Answer | undefined;
      await waitFor(
        'an HTTPS 200 with a certificate from pebble',
        async () =>
          (first = await request('https', ports.https, name, '/', root).catch(() => undefined))?.status === 200,
        20_000,
      );
      const firstMs = Date.now() - added;
      console.log(`domain added → first HTTPS 200: ${firstMs} ms`);
      expect(firstMs).toBeLessThan(10_000);
      expect(JSON.parse(first!.text).headers['x-forwarded-proto']).toBe('https');

      // Plain HTTP now redirects, except ACME's own path. (nginx: once its reload is over. Until the old worker has
      // its signal to quit, it may still take a new connection with the configuration from before the certificate.)
      await reloadOver(proc);
      const plain = await request('http', ports.http, name, '/a?b=1');
      expect([plain.status, plain.headers.location]).toEqual([301, `https://${name}:${ports.https}/a?b=1`]);
      expect((await request('http', ports.http, name, '/.well-known/acme-challenge/unknown')).status).not.toBe(301);
      // A name without a certificate of its own gets the apps domain's (self-signed): no valid chain for it.
      await expect(request('https', ports.https, unique(), '/', root)).rejects.toThrow();
      expect((await eventsOf(api, owner, service.id)).map((e: { type: string }) => e.type)).toContain(
        'certificate_issued',
      );
      // The API says so, with the certificate's expiry (what the dashboard's Domains tab shows).
      const shown = await api.get(`/v1/services/${service.id}/custom-domains/${name}`, owner);
      expect(shown.body.certificate).toMatchObject({ status: 'issued', expiresAt: expect.any(String) });
      expect(Date.parse(shown.body.certificate.expiresAt)).toBeGreaterThan(Date.now());

      // The private key is sealed at rest: no PEM private key in the store's files (an embedded store is files here).
      if (!process.env.TEST_DATABASE_URL) {
        const dataDir = /"dataDir":"([^"]+)"/.exec(proc.stdout())![1]!;
        const files = (dir: string): string[] =>
          readdirSync(dir).flatMap((f) => {
            const p = path.join(dir, f);
            const stat = statSync(p);
            // Not the router process's sockets, nor the services' build disks (sparse images of the tenant's own
            // build tree, 8 GiB long: Slipway writes nothing of its own there).
            if (stat.isFile() && /\/build-disk\.img$/.test(p)) return [];
            return stat.isDirectory() ? files(p) : stat.isFile() ? [p] : [];
          });
        const pem = files(dataDir).filter(
          // The copies the proxy reads (nginx's files, the Node router process's last update) are files readable by
          // Slipway's user only.
          (f) =>
            !(
              /\/router-tls\/|\/router-nginx\/certs\/|\/router-node\/(state|settings)\.json$/.test(f) &&
              (statSync(f).mode & 0o077) === 0
            ) && /PRIVATE KEY-----/.test(readFileSync(f, 'latin1')),
        );
        expect(pem).toEqual([]);
      }

      // kill -9, start again: the same certificate is served from the store, without a new order.
      await proc.kill(); // SIGKILL
      ({ proc, api } = current = await slipway.start());
      const again = await request('https', ports.https, name, '/', root);
      expect([again.status, again.serial]).toEqual([200, first!.serial]);

      // Renewed at two thirds of its lifetime; the new one is served without a restart.
      await waitFor(
        'the renewed certificate',
        async () => (await request('https', ports.https, name, '/', root)).serial !== first!.serial,
        VALIDITY_SECONDS * 1000,
      );
      const types = (await eventsOf(api, owner, service.id)).map((e: { type: string }) => e.type);
      expect(types.filter((t: string) => t === 'certificate_issued')).toHaveLength(1);
      expect(types).toContain('certificate_renewed');

      // Deleted: no route and no certificate, at once.
      expect((await api.delete(`/v1/services/${service.id}/custom-domains/${name}`, owner)).status).toBe(204);
      await expect(request('https', ports.https, name, '/', root)).rejects.toThrow();
      expect((await request('http', ports.http, name)).status).toBe(404);
    }, 120_000);

    it("serves a www twin's own certificate with its 301 to the primary name", async () => {
      const { api } = current ?? (current = await slipway.start());
      const owner = await signUp(api);
      const { service } = await deployFixture(api, owner, 'node-web');
      const name = unique();
      await dns.addA(name, ['127.0.0.1']);
      await dns.addA(`www.${name}`, ['127.0.0.1']);
      const added = await api.post(`/v1/services/${service.id}/custom-domains`, { name }, owner);
      expect(added.status).toBe(201);
      for (const domain of added.body) await proveOwnership(dns, domain); // the apex and its twin
      // The twin routes nowhere itself: over HTTPS it answers the redirect, with a chain valid for its own name.
      let twin: Answer | undefined;
      await waitFor(
        'the twin over HTTPS with its own certificate',
        async () => (twin = await request('https', ports.https, `www.${name}`, '/p?q=1', root).catch(() => undefined)),
        20_000,
      );
      expect([twin!.status, twin!.headers.location]).toEqual([301, `https://${name}:${ports.https}/p?q=1`]);
    }, 60_000);

    it('records a failed order as an event and retries it, serving nothing meanwhile', async () => {
      const { api } = current ?? (current = await slipway.start());
      const owner = await signUp(api);
      const { service } = await deployFixture(api, owner, 'node-web');
      // Verified (a router address), but pebble's http-01 check reaches 127.0.0.2, where the router does not listen.
      const name = unique();
      await dns.addA(name, ['127.0.0.2']);
      const added = await api.post(`/v1/services/${service.id}/custom-domains`, { name }, owner);
      expect(added.status).toBe(201);
      await proveOwnership(dns, added.body[0]);
      await waitFor(
        'two failed orders',
        async () =>
          (await eventsOf(api, owner, service.id)).filter((e: { type: string }) => e.type === 'certificate_failed')
            .length >= 2,
        30_000,
      );
      const failed = (await eventsOf(api, owner, service.id)).find(
        (e: { type: string }) => e.type === 'certificate_failed',
      );
      expect(failed.details).toMatchObject({ name, error: expect.any(String) });
      const listed = await api.get(`/v1/services/${service.id}/custom-domains`, owner);
      const mine = listed.body.find((r: { customDomain: { name: string } }) => r.customDomain.name === name);
      expect(mine.customDomain.certificate).toMatchObject({ status: 'failed', error: expect.any(String) });
      await expect(request('https', ports.https, name, '/', root)).rejects.toThrow();
      expect((await request('http', ports.http, name)).status).toBe(200); // still served over HTTP
    }, 60_000);
  });

describe.skipIf(!hasPebble())('an ACME server that never answers', () => {
  let black: net.Server;
  const sockets: net.Socket[] = [];
  let server: TestServer | undefined;
  let blackDns: TestDns;
  afterAll(async () => {
    await server?.close();
    for (const s of sockets) s.destroy();
    black?.close();
    await blackDns?.close();
  });

  it("holds back no domain's verification: orders run apart from DNS checks", async () => {
    // Accepts connections and says nothing: every order waits on it.
    black = net.createServer((socket) => void sockets.push(socket)).listen(0, '127.0.0.1');
    await once(black, 'listening');
    blackDns = await startTestDns();
    server = await bootServer({
      SLIPWAY_DNS_SERVERS: blackDns.server,
      SLIPWAY_ROUTER_PUBLIC_IPS: '127.0.0.1',
      SLIPWAY_DOMAIN_CHECK_MS: '200',
      SLIPWAY_DOMAIN_RETRY_MS: '200',
      SLIPWAY_ACME_DIRECTORY_URL: `https://127.0.0.1:${(black.address() as AddressInfo).port}/dir`,
    });
    const api = client(server.url);
    const owner = await signUp(api);
    const { service } = await deployFixture(api, owner, 'node-web');
    const status = async (name: string) =>
      (await api.get(`/v1/services/${service.id}/custom-domains/${name}`, owner)).body.verificationStatus;
    for (const name of [unique(), unique()]) {
      await blackDns.addA(name, ['127.0.0.1']);
      const added = await api.post(`/v1/services/${service.id}/custom-domains`, { name }, owner);
      expect(added.status).toBe(201);
      await proveOwnership(blackDns, added.body[0]);
      // Verified by the background checks, although the first name's order is stuck on the silent server.
      await waitFor(`${name} verified`, async () => (await status(name)) === 'verified', 10_000);
    }
  }, 60_000);
});
