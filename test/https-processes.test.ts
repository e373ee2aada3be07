/**
 * Certificates with two Slipway processes on one Postgres (TEST_DATABASE_URL): one order for a domain, its http-01
 * answer given by whichever router pebble reaches (here always A's), and both HTTPS listeners offering the certificate.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasPebble, startPebble, type TestAcme } from './helpers/acme.js';
import { deployFixture } from './helpers/apps.js';
import { client, signUp } from './helpers/client.js';
import { proveOwnership, startTestDns, type TestDns } from './helpers/dns.js';
import { freePort, freshStore, removeDataDir, spawnSlipway, waitFor, type SlipwayProcess } from './helpers/process.js';
import { TEST_DATABASE_URL } from './helpers/server.js';

/**
 * The serial of the certificate the HTTPS listener on `port` offers for `name`, when its chain verifies against `ca`.
 * (A TLS handshake only: each process serves the apps it deployed itself, so only the certificate is shared.)
 */
function servedSerial(port: number, name: string, ca: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: name, ca }, () => {
      resolve(socket.authorized ? socket.getPeerCertificate().serialNumber : undefined);
      socket.end();
    });
    socket.on('error', () => resolve(undefined));
  });
}

describe.skipIf(!TEST_DATABASE_URL || !hasPebble())('certificates across Slipway processes', () => {
  let dns: TestDns;
  let acme: TestAcme;
  let store: Awaited<ReturnType<typeof freshStore>>;
  const dirB = mkdtempSync(path.join(tmpdir(), 'slipway-https-b-'));
  const procs: SlipwayProcess[] = [];
  const ports = { a: { api: 0, http: 0, https: 0 }, b: { api: 0, http: 0, https: 0 } };

  beforeAll(async () => {
    for (const p of [ports.a, ports.b])
      [p.api, p.http, p.https] = [await freePort(), await freePort(), await freePort()];
    dns = await startTestDns();
    acme = await startPebble({ dnsServer: dns.server, httpPort: ports.a.http, validitySeconds: 3600 });
    store = await freshStore();
    const shared = {
      DATABASE_URL: store.databaseUrl!,
      SLIPWAY_SECRET_KEY: randomBytes(32).toString('hex'), // both must open the sealed keys
      SLIPWAY_DNS_SERVERS: dns.server,
      SLIPWAY_ROUTER_PUBLIC_IPS: '127.0.0.1',
      SLIPWAY_DOMAIN_CHECK_MS: '200',
      SLIPWAY_ACME_DIRECTORY_URL: acme.directoryUrl,
      SLIPWAY_ACME_CA_BUNDLE: acme.caBundleFile,
    };
    for (const [p, dataDir] of [
      [ports.a, store.dataDir],
      [ports.b, dirB],
    ] as const) {
      const proc = spawnSlipway({
        ...shared,
        SLIPWAY_DATA_DIR: dataDir,
        SLIPWAY_PORT: String(p.api),
        SLIPWAY_ROUTER_PORT: String(p.http),
        SLIPWAY_ROUTER_HTTPS_PORT: String(p.https),
      });
      procs.push(proc);
      await proc.waitForOutput(/"msg":"slipway is up"/, 60_000);
    }
  }, 120_000);
  afterAll(async () => {
    for (const proc of procs) await proc.kill();
    await acme?.close();
    await dns?.close();
    await removeDataDir(dirB);
    await store?.remove();
  });

  it('orders once, answers http-01 from any router, and every router serves the certificate', async () => {
    const viaB = client(`http://127.0.0.1:${ports.b.api}`);
    const owner = await signUp(viaB);
    const { service } = await deployFixture(viaB, owner, 'static-site', {
      type: 'static_site',
      serviceDetails: { publishPath: 'public' },
    });
    const name = `shop-${randomBytes(4).toString('hex')}.com`;
    await dns.addA(name, ['127.0.0.1']);
    const added = await viaB.post(`/v1/services/${service.id}/custom-domains`, { name }, owner);
    expect(added.status).toBe(201);
    await proveOwnership(dns, added.body[0]);
    expect((await viaB.post(`/v1/services/${service.id}/custom-domains/${name}/verify`, {}, owner)).status).toBe(202);

    const root = await acme.issuingRoot();
    let serials: Array<string | undefined> = [];
    await waitFor(
      'both routers to serve the certificate',
      async () => {
        serials = [await servedSerial(ports.a.https, name, root), await servedSerial(ports.b.https, name, root)];
        return serials.every(Boolean);
      },
      30_000,
    );
    expect(serials[0]).toBe(serials[1]);
    const events = await viaB.get(`/v1/services/${service.id}/events?limit=100&includeSlipwayEvents=true`, owner);
    const issued = events.body.filter((e: { event: { type: string } }) => e.event.type === 'certificate_issued');
    expect(issued).toHaveLength(1);
  }, 90_000);
});
