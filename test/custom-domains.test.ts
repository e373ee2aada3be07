/**
 * Custom domains against a real DNS server (pebble-challtestsrv): Render's routes and bodies, names unique in a
 * workspace, verification by CNAME or by the router's addresses with the workspace's TXT proof, routing by Host once
 * verified (the www twin a 301), a domain that stops pointing, and deletion stopping the routing at once.
 * Ownership across workspaces: custom-domain-ownership.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployFixture, viaRouterAs } from './helpers/apps.js';
import { client, signUp, type Client } from './helpers/client.js';
import { createUploaded, syncEnded } from './helpers/blueprints.js';
import { hasChallTestSrv, proveOwnership, startTestDns, type TestDns } from './helpers/dns.js';
import { waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

const ROUTER_IP = '203.0.113.10';
let dns: TestDns;
let server: TestServer;
let api: Client;

describe.skipIf(!hasChallTestSrv())('custom domains', () => {
  beforeAll(async () => {
    dns = await startTestDns();
    server = await bootServer({
      SLIPWAY_DNS_SERVERS: dns.server,
      SLIPWAY_ROUTER_PUBLIC_IPS: ROUTER_IP,
      SLIPWAY_DOMAIN_CHECK_MS: '200',
      SLIPWAY_DOMAIN_RETRY_MS: '200',
      SLIPWAY_DOMAINS_PER_SERVICE: '5',
    });
    api = client(server.url);
  });
  afterAll(async () => {
    await server?.close();
    await dns?.close();
  });

  /** A registrable (apex) name no other test uses. */
  const unique = () => `shop-${randomBytes(4).toString('hex')}.com`;
  /** What the router answers for `Host: <host>:<router port>`, without following redirects. */
  const routed = (host: string, path = '/') => viaRouterAs(server.slipway.routerPort, host, path, { agent: false });

  it('adds an apex with its www twin, verifies it by its A record and TXT proof, routes it, redirects the twin, and stops when DNS moves away', async () => {
    const owner = await signUp(api);
    const { service } = await deployFixture(api, owner, 'node-web');
    const apex = unique();

    const added = await api.post(
      `/v1/services/${service.id}/custom-domains`,
      { name: `  ${apex.toUpperCase()}. ` },
      owner,
    );
    expect(added.status, added.text).toBe(201);
    expect(added.body).toHaveLength(2);
    const [main, twin] = added.body;
    expect(main).toMatchObject({
      id: expect.stringMatching(/^cdm-/),
      name: apex,
      domainType: 'apex',
      publicSuffix: 'com',
      redirectForName: '',
      verificationStatus: 'unverified',
      server: { id: service.id, name: service.name },
    });
    expect(main.dnsRecords).toEqual([{ type: 'A', name: apex, value: ROUTER_IP }]);
    expect(main.verificationRecord).toMatchObject({ type: 'TXT', name: `_slipway-challenge.${apex}` });
    expect(main.unverifiedReason).toBe('not checked yet');
    expect(twin).toMatchObject({ name: `www.${apex}`, domainType: 'subdomain', redirectForName: apex });
    expect(twin.dnsRecords).toContainEqual({ type: 'CNAME', name: `www.${apex}`, value: `${service.slug}.localhost` });

    // Unverified: the router does not know the name.
    expect((await routed(apex)).status).toBe(404);
    expect((await api.post(`/v1/services/${service.id}/custom-domains/${apex}/verify`, undefined, owner)).status).toBe(
      202,
    );
    const unpointed = (await api.get(`/v1/services/${service.id}/custom-domains/${apex}`, owner)).body;
    expect(unpointed.verificationStatus).toBe('unverified');
    expect(unpointed.unverifiedReason).toMatch(/does not point here \(no A, AAAA or CNAME record was found.*NXDOMAIN/);

    // DNS points at the router (A for the apex): not proof that the name is this workspace's.
    await dns.addA(apex, [ROUTER_IP]);
    await api.post(`/v1/services/${service.id}/custom-domains/${apex}/verify`, undefined, owner);
    const unproven = await api.get(`/v1/services/${service.id}/custom-domains/${apex}`, owner);
    expect(unproven.body.verificationStatus).toBe('unverified');
    expect(unproven.body.unverifiedReason).toMatch(/does not prove/);
    expect(unproven.body.unverifiedReason).toContain(`no TXT record at _slipway-challenge.${apex}`);
    // With the TXT proof for the apex, and a CNAME to the service for www: verify answers 202 and GET shows it.
    await proveOwnership(dns, main);
    await dns.setCname(`www.${apex}`, `${service.slug}.localhost`);
    expect(
      (await api.post(`/v1/services/${service.id}/custom-domains/${main.id}/verify`, undefined, owner)).status,
    ).toBe(202);
    const list = await api.get(`/v1/services/${service.id}/custom-domains`, owner);
    expect(
      list.body.map((i: { customDomain: { verificationStatus: string } }) => i.customDomain.verificationStatus),
    ).toEqual(['verified', 'verified']);
    expect(list.body[0].cursor).toBeDefined();
    expect(list.body[0].customDomain.unverifiedReason).toBe('');
    const served = await routed(apex, '/hello?x=1');
    expect(served.status).toBe(200);
    expect(served.json().env.SLIPWAY_SERVICE_ID).toBe(service.id);
    const redirect = await routed(`www.${apex}`, '/path?q=2');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.location).toBe(`http://${apex}:${server.slipway.routerPort}/path?q=2`);
    const events = await api.get(`/v1/services/${service.id}/events?limit=50&includeSlipwayEvents=true`, owner);
    expect(events.body.map((e: { event: { type: string } }) => e.event.type)).toContain('custom_domain_verified');

    // The apex stops pointing here: the background check marks it unverified (not deleted) and routing stops.
    await dns.clearA(apex);
    await dns.addA(apex, ['198.51.100.7']);
    await api.post(`/v1/services/${service.id}/custom-domains/${apex}/verify`, undefined, owner);
    const nowhere = (await api.get(`/v1/services/${service.id}/custom-domains/${apex}`, owner)).body;
    expect(nowhere.verificationStatus).toBe('unverified');
    expect(nowhere.unverifiedReason).toContain(`${apex} does not point here (found A 198.51.100.7)`);
    expect((await routed(apex)).status).toBe(404);
    const after = await api.get(`/v1/services/${service.id}/events?limit=50&includeSlipwayEvents=true`, owner);
    expect(after.body.map((e: { event: { type: string } }) => e.event.type)).toContain('custom_domain_unverified');

    // Deleting the apex deletes its twin, and the twin stops routing at once.
    expect((await api.delete(`/v1/services/${service.id}/custom-domains/${apex}`, owner)).status).toBe(204);
    expect((await api.get(`/v1/services/${service.id}/custom-domains`, owner)).body).toEqual([]);
    expect((await routed(`www.${apex}`)).status).toBe(404);
  });

  it('verifies in the background; another workspace may add the name, but not verify it', async () => {
    const owner = await signUp(api);
    const { service } = await deployFixture(api, owner, 'node-web');
    const name = `app.${unique()}`;
    const added = await api.post(`/v1/services/${service.id}/custom-domains`, { name }, owner);
    expect(added.body).toHaveLength(1); // not an apex, not www.: no twin
    expect(added.body[0]).toMatchObject({ domainType: 'subdomain', redirectForName: '' });

    // Another workspace may add it too (no 409 telling that someone holds it), and cannot see or delete ours (404).
    const other = await signUp(api);
    const theirs = await deployFixture(api, other, 'node-web');
    const path = `/v1/services/${theirs.service.id}/custom-domains`;
    expect((await api.post(path, { name }, other)).status).toBe(201);
    expect((await api.get(`/v1/services/${service.id}/custom-domains/${name}`, other)).status).toBe(404);
    expect((await api.delete(`/v1/services/${service.id}/custom-domains/${name}`, other)).status).toBe(404);

    // The CNAME reaches our service's own name: ours verifies in the background, theirs never does.
    await dns.setCname(name, `${service.slug}.localhost`);
    await waitFor(
      'the background check to verify it',
      async () =>
        (await api.get(`/v1/services/${service.id}/custom-domains/${name}`, owner)).body.verificationStatus ===
        'verified',
      15_000,
    );
    await waitFor('the router to serve it', async () => (await routed(name)).status === 200, 5_000);
    expect((await routed(name)).json().env.SLIPWAY_SERVICE_ID).toBe(service.id);
    await api.post(`${path}/${name}/verify`, undefined, other);
    expect((await api.get(`${path}/${name}`, other)).body.verificationStatus).toBe('unverified');
  });

  it('refuses names that are not hostnames, IPs, public suffixes and the apps domain (400), and takes IDNs as punycode', async () => {
    const owner = await signUp(api);
    const { service } = await deployFixture(api, owner, 'node-web');
    const path = `/v1/services/${service.id}/custom-domains`;
    for (const name of [
      'not a host',
      '203.0.113.9',
      '[::1]',
      'com',
      'co.uk',
      `x.localhost`,
      'localhost',
      '-bad-.example.com',
      'a'.repeat(64) + '.example.com',
    ])
      expect((await api.post(path, { name }, owner)).status, name).toBe(400);
    expect((await api.post(path, { name: 42 }, owner)).status).toBe(400);
    const idn = await api.post(path, { name: `bücher-${randomBytes(3).toString('hex')}.example.com` }, owner);
    expect(idn.status).toBe(201);
    expect(idn.body[0].name).toMatch(/^xn--bcher-/);
    // A service's domains are capped (each costs DNS lookups every pass): 1 + 2 + 2 = 5, then a 409.
    expect((await api.post(path, { name: unique() }, owner)).status).toBe(201);
    expect((await api.post(path, { name: unique() }, owner)).status).toBe(201);
    const over = await api.post(path, { name: `one.${unique()}` }, owner);
    expect(over.status).toBe(409);
    expect(over.body.message).toMatch(/at most 5/);
    // The name works in place of the id; an unknown one is a 404.
    expect((await api.get(`${path}/${idn.body[0].name}`, owner)).body.id).toBe(idn.body[0].id);
    expect((await api.get(`${path}/nope.example.com`, owner)).status).toBe(404);
  });

  it("adds a blueprint's domains to its service on sync, once; a name another service of the workspace holds is a warning", async () => {
    const owner = await signUp(api);
    const other = await signUp(api);
    const bare = (as: typeof owner) =>
      api.post('/v1/services', { type: 'static_site', name: `bare-${randomBytes(3).toString('hex')}` }, as);
    const [sibling, theirs] = [(await bare(owner)).body.service, (await bare(other)).body.service];
    const [taken, elsewhere] = [unique(), unique()];
    expect((await api.post(`/v1/services/${sibling.id}/custom-domains`, { name: taken }, owner)).status).toBe(201);
    expect((await api.post(`/v1/services/${theirs.id}/custom-domains`, { name: elsewhere }, other)).status).toBe(201);
    const mine = `bp-${randomBytes(3).toString('hex')}.example.com`;
    const yaml = `services:
  - type: web
    name: bp-site
    runtime: static
    staticPublishPath: ./public
    domains:
      - ${mine}
      - ${taken}
      - ${elsewhere}
`;
    const created = await createUploaded(api, owner, 'with-domains', yaml);
    expect(created.status).toBe(201);
    const first = await syncEnded(api, owner, created.body.blueprint.id, created.body.sync.id);
    const site = first.resources.find((r: { name: string }) => r.name === 'bp-site');
    expect(site).toMatchObject({
      action: 'created',
      warnings: [expect.stringMatching(new RegExp(`${taken}.*already.*this workspace`))],
    });
    // Another workspace's name is added (unverified until DNS proves it ours), with its www twin.
    const names = async () =>
      (await api.get(`/v1/services/${site.id}/custom-domains`, owner)).body
        .map((i: { customDomain: { name: string } }) => i.customDomain.name)
        .sort();
    const expected = [mine, elsewhere, `www.${elsewhere}`].sort();
    expect(await names()).toEqual(expected);
    // A second sync: the service keeps its domains once, and the sibling's name is still a warning.
    const again = await api.post(`/v1/blueprints/${created.body.blueprint.id}/sync`, {}, owner);
    const second = await syncEnded(api, owner, created.body.blueprint.id, again.body.id);
    const resynced = second.resources.find((r: { name: string }) => r.name === 'bp-site');
    expect(resynced.warnings).toEqual([expect.stringMatching(new RegExp(taken))]);
    expect(await names()).toEqual(expected);
  });
});
