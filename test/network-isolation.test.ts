import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { deployFixture, processesOf, viaRouter } from './helpers/apps.js';
import { signUp, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

// Namespaces need root; CI runs as root and requires them (SLIPWAY_REQUIRE_SERVICES=1).
const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT && process.env.SLIPWAY_REQUIRE_SERVICES === '1') throw new Error('network isolation tests need root');
const STATE_DIR = '/run/slipway/net';
const PORT = 10000;

/** The namespace address Slipway leased to an instance, from the machine-wide lease files. */
function addressOf(instanceId: string): string | undefined {
  for (const subnet of readdirSync(STATE_DIR).filter((d) => /^\d+$/.test(d))) {
    const dir = path.join(STATE_DIR, subnet, 'leases');
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
      const lease = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { id: string };
      if (lease.id === instanceId) return `10.213.${subnet}.${file.slice(0, -5)}`;
    }
  }
  return undefined;
}

describe.runIf(IS_ROOT)('network isolation between workspaces', () => {
  const t = useServer({ SLIPWAY_NETWORK: 'namespaces' });
  const routerPort = () => t.server.slipway.routerPort;
  const instancesOf = async (as: TestUser, serviceId: string) => (await t.api.get(`/v1/services/${serviceId}/instances`, as)).body.map((e: any) => e.id) as string[];
  /** Asks a tenant's prober app, through the router, to try something on the network. */
  const probe = async (slug: string, what: string, q: Record<string, string | number>) =>
    JSON.parse((await viaRouter(routerPort(), slug, `/${what}?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`)).text);

  it('says so in /status', async () => {
    const status = await t.api.get('/status');
    expect(status.body.isolation).toMatchObject({ network: 'namespaces' });
    expect(status.body.isolation.notes.join('\n')).not.toMatch(/one team only/);
  });

  it("reaches its own services by internal hostname, never another workspace's, nor Slipway's ports", async () => {
    const [a, b] = [await signUp(t.api), await signUp(t.api)];
    const theirs = await deployFixture(t.api, b, 'net-prober', { type: 'private_service' });
    const mine = await deployFixture(t.api, a, 'net-prober', { type: 'private_service' });
    const web = await deployFixture(t.api, a, 'net-prober');
    for (const d of [theirs, mine, web]) expect(d.deploy.status, d.deploy.failureReason ?? '').toBe('live');
    const [theirInstance] = await instancesOf(b, theirs.service.id);
    const [myInstance] = await instancesOf(a, mine.service.id);
    const theirAddress = addressOf(theirInstance!);
    expect(theirAddress, 'each instance has an address of its own').toMatch(/^10\.213\./);

    // Its own private service: by its slug, Render's internal hostname, on PORT.
    expect(await probe(web.service.slug, 'resolve', { name: mine.service.slug })).toEqual({ ok: true, address: addressOf(myInstance!) });
    expect(await probe(web.service.slug, 'connect', { host: mine.service.slug, port: PORT })).toEqual({ ok: true });

    // The other workspace's: no name, no route, even by address.
    expect((await probe(web.service.slug, 'resolve', { name: theirs.service.slug })).ok).toBe(false);
    expect(await probe(web.service.slug, 'connect', { host: theirAddress!, port: PORT })).toMatchObject({ ok: false });
    // Slipway's API and router on the host's loopback are out of reach, and no host socket is listed.
    const apiPort = Number(new URL(t.server.url).port);
    for (const port of [apiPort, routerPort()]) expect(await probe(web.service.slug, 'connect', { host: '127.0.0.1', port })).toMatchObject({ ok: false });
    const listening: string[] = await probe(web.service.slug, 'listening', {});
    expect(listening.map((l) => parseInt(l.split(':')[1]!, 16))).toEqual([PORT]);
  });

  it("a squatter cannot take a crashed instance's address, nor receive its requests", async () => {
    const [a, b] = [await signUp(t.api), await signUp(t.api)];
    const victim = await deployFixture(t.api, b, 'net-prober');
    const squatter = await deployFixture(t.api, a, 'net-prober');
    const [victimInstance] = await instancesOf(b, victim.service.id);
    const victimAddress = addressOf(victimInstance!)!;
    // The squatter loops on binding the victim's address and port, and on its own namespace's every address.
    expect(await probe(squatter.service.slug, 'bind', { host: victimAddress, port: PORT })).toEqual({ ok: false, error: 'EADDRNOTAVAIL' });
    await probe(squatter.service.slug, 'squat', { host: victimAddress, port: PORT, ms: 8000 });

    for (const pid of processesOf(victim.service.id)) process.kill(pid, 'SIGKILL');
    // Requests meant for the victim, with its users' cookies, while it is down and after it is back.
    const statuses: number[] = [];
    const until = Date.now() + 4000;
    while (Date.now() < until) {
      const reply = await viaRouter(routerPort(), victim.service.slug, '/secret', { headers: { cookie: 'session=victims-secret' } }).catch(() => undefined);
      if (reply) statuses.push(reply.status);
      await new Promise((r) => setTimeout(r, 20));
    }
    await waitFor('the victim to be back', async () => (await viaRouter(routerPort(), victim.service.slug, '/')).status === 200, 20_000);
    const received: Array<{ squatted?: string; cookie?: string | null; host?: string }> = await probe(squatter.service.slug, 'received', {});
    expect(received.filter((r) => r.squatted)).toEqual([]);
    expect(received.filter((r) => r.cookie?.includes('victims-secret') || r.host?.startsWith(victim.service.slug))).toEqual([]);
    expect(statuses.length).toBeGreaterThan(10);
  });
});

describe('the shared network', () => {
  const t = useServer({ SLIPWAY_NETWORK: 'shared' });
  it('is reported in /status as fit for one team only', async () => {
    const status = await t.api.get('/status');
    expect(status.body.isolation.network).toBe('shared');
    expect(status.body.isolation.notes.join('\n')).toMatch(/one team only/);
  });
});
