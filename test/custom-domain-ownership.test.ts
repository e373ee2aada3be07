/**
 * Who may serve a custom domain, against a real DNS server (pebble-challtestsrv) and through the real router: a name
 * that points at the shared router is no proof; a workspace proves a name with its TXT record, or a subdomain with a
 * CNAME to its own service. Any workspace may add any name (no 409 tells that another holds it), and the proof wins.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployFixture, viaRouterAs } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { hasChallTestSrv, proveOwnership, startTestDns, type TestDns } from './helpers/dns.js';
import { bootServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

const ROUTER_IP = '203.0.113.10';
let dns: TestDns;
let server: TestServer;
let api: Client;
/** Three workspaces with a live web service each, shared by the tests (each test uses names of its own). */
let tenants: Tenant[];

interface Tenant {
  user: TestUser;
  service: { id: string; slug: string };
}
/** A workspace with a live web service. */
async function tenant(): Promise<Tenant> {
  const user = await signUp(api);
  const { service } = await deployFixture(api, user, 'node-web');
  return { user, service };
}
const path = (t: Tenant, name = '') => `/v1/services/${t.service.id}/custom-domains${name && `/${name}`}`;
const add = (t: Tenant, name: string) => api.post(path(t), { name }, t.user);
/** Checks the name now (as the tenant would), and answers its body afterwards. */
async function verify(t: Tenant, name: string) {
  expect((await api.post(`${path(t, name)}/verify`, undefined, t.user)).status).toBe(202);
  return (await api.get(path(t, name), t.user)).body;
}
/** Which service the router sends `host` to (undefined: none, 404). */
async function servedBy(host: string): Promise<string | undefined> {
  const reply = await viaRouterAs(server.slipway.routerPort, host, '/', { agent: false });
  if (reply.status === 404) return undefined;
  expect(reply.status, reply.text).toBe(200);
  return reply.json().env.SLIPWAY_SERVICE_ID;
}
const eventsOf = async (t: Tenant) =>
  (await api.get(`/v1/services/${t.service.id}/events?limit=50&includeSlipwayEvents=true`, t.user)).body.map(
    (e: { event: { type: string; details: { name?: string; reason?: string } } }) => e.event,
  );
const unique = () => `own-${randomBytes(4).toString('hex')}.com`;

describe.skipIf(!hasChallTestSrv())('custom domain ownership', () => {
  beforeAll(async () => {
    dns = await startTestDns();
    server = await bootServer({
      SLIPWAY_DNS_SERVERS: dns.server,
      SLIPWAY_ROUTER_PUBLIC_IPS: ROUTER_IP,
      SLIPWAY_DOMAIN_CHECK_MS: '200',
      SLIPWAY_DOMAIN_RETRY_MS: '60000', // checks in this file are the explicit ones
    });
    api = client(server.url);
    tenants = [await tenant(), await tenant(), await tenant()];
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await dns?.close();
  });

  it('does not verify a name that only points at the router; its owner adds it too, proves it by TXT, and serves it', async () => {
    const [squatter, owner] = tenants as [Tenant, Tenant];
    const name = unique();
    await dns.addA(name, [ROUTER_IP]); // the owner's DNS points at this Slipway

    expect((await add(squatter, name)).status).toBe(201);
    const claimed = await verify(squatter, name);
    expect(claimed.verificationStatus).toBe('unverified');
    expect(claimed.verificationRecord).toEqual({
      type: 'TXT',
      name: `_slipway-challenge.${name}`,
      value: expect.stringMatching(/^slipway-verify=[\w-]{22}$/),
    });
    expect(claimed.unverifiedReason).toContain(`_slipway-challenge.${name}`);
    expect(claimed.dnsRecords).toEqual([{ type: 'A', name, value: ROUTER_IP }]);
    expect(await servedBy(name)).toBeUndefined();

    // The owner adds the same name: no 409 telling that another workspace holds it. Its token is its own.
    const added = await add(owner, name);
    expect(added.status, added.text).toBe(201);
    const record = added.body[0].verificationRecord;
    expect(record.name).toBe(`_slipway-challenge.${name}`);
    expect(record.value).not.toBe(claimed.verificationRecord.value);
    // The same workspace's token whatever the name; another name of the owner's workspace shows the same value.
    const again = await add(owner, `shop.${unique()}`);
    expect(again.body[0].verificationRecord.value).toBe(record.value);

    await proveOwnership(dns, added.body[0]);
    expect(await verify(owner, name)).toMatchObject({ verificationStatus: 'verified', unverifiedReason: '' });
    expect(await servedBy(name)).toBe(owner.service.id);
    // The squatter's check sees the owner's token, not its own: still not its name.
    expect((await verify(squatter, name)).verificationStatus).toBe('unverified');
    expect(await servedBy(name)).toBe(owner.service.id);
    // In one workspace a name is held once (409 there tells nothing about anyone else).
    expect((await add(owner, name)).status).toBe(409);
  });

  it('moves a name to the workspace its DNS proves, with an event for the one that loses it', async () => {
    const [, first, second] = tenants as [Tenant, Tenant, Tenant];
    const name = unique();
    const challenge = `_slipway-challenge.${name}`;
    await dns.addA(name, [ROUTER_IP]);
    const mine = (await add(first, name)).body[0];
    await proveOwnership(dns, mine);
    expect((await verify(first, name)).verificationStatus).toBe('verified');
    expect(await servedBy(name)).toBe(first.service.id);

    // Both tokens in DNS: the workspace that serves the name keeps it while its proof stands.
    const theirs = (await add(second, name)).body[0];
    await proveOwnership(dns, theirs);
    const held = await verify(second, name);
    expect(held.verificationStatus).toBe('unverified');
    expect(held.unverifiedReason).toMatch(/also proves it for another workspace/);
    expect(await servedBy(name)).toBe(first.service.id);

    // The domain changes hands: only the second workspace's token is left. Its check takes the name at once.
    await dns.clearTxt(challenge);
    await proveOwnership(dns, theirs);
    expect((await verify(second, name)).verificationStatus).toBe('verified');
    expect(await servedBy(name)).toBe(second.service.id);
    const lost = await api.get(path(first, name), first.user);
    expect(lost.body).toMatchObject({ verificationStatus: 'unverified', unverifiedReason: expect.any(String) });
    expect(lost.body.unverifiedReason).not.toBe('');
    expect(await eventsOf(first)).toContainEqual(
      expect.objectContaining({ type: 'custom_domain_unverified', details: expect.objectContaining({ name }) }),
    );
  });

  it("does not verify a subdomain CNAME'd to another workspace's service; a CNAME to its own service verifies", async () => {
    const [mine, other] = tenants as [Tenant, Tenant];
    // The apps domain's names resolve to the router, as a wildcard record makes them in production.
    for (const t of [mine, other]) await dns.addA(`${t.service.slug}.localhost`, [ROUTER_IP]);

    const borrowed = `app.${unique()}`;
    await dns.setCname(borrowed, `${other.service.slug}.localhost`);
    expect((await add(mine, borrowed)).status).toBe(201);
    const refused = await verify(mine, borrowed);
    expect(refused.verificationStatus).toBe('unverified');
    expect(refused.unverifiedReason).toContain(`${mine.service.slug}.localhost`); // what to create instead
    expect(refused.unverifiedReason).toContain(`found CNAME ${other.service.slug}.localhost`); // what it found
    expect(await servedBy(borrowed)).toBeUndefined();

    const own = `api.${unique()}`;
    await dns.setCname(own, `${mine.service.slug}.localhost`);
    expect((await add(mine, own)).status).toBe(201);
    expect((await verify(mine, own)).verificationStatus).toBe('verified');
    expect(await servedBy(own)).toBe(mine.service.id);
  });

  it('verifies a name in one workspace only when two workspaces prove it at the same moment', async () => {
    for (let round = 0; round < 3; round++) {
      const name = unique();
      await dns.addA(name, [ROUTER_IP]);
      const added = [];
      for (const t of tenants) added.push((await add(t, name)).body[0]);
      // The background pass checks new names at once: let it find no proof (its next try is a minute away), so that
      // the checks below are the ones that race.
      for (const t of tenants)
        await waitFor(
          'the first background check',
          async () => (await api.get(path(t, name), t.user)).body.unverifiedReason !== 'not checked yet',
        );
      for (const domain of added) await proveOwnership(dns, domain);
      await Promise.all(tenants.map((t) => api.post(`${path(t, name)}/verify`, undefined, t.user)));
      const statuses = await Promise.all(
        tenants.map(async (t) => (await api.get(path(t, name), t.user)).body.verificationStatus),
      );
      expect(
        statuses.filter((s) => s === 'verified'),
        statuses.join(),
      ).toHaveLength(1);
      const winner = tenants[statuses.indexOf('verified')]!;
      expect(await servedBy(name)).toBe(winner.service.id);
    }
  });
});
