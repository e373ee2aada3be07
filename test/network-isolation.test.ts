import dgram from 'node:dgram';
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { deployFixture, processesOf, viaRouter } from './helpers/apps.js';
import { signUp, type TestUser } from './helpers/client.js';
import { hostAddresses, hostSideOf, linkLocalOf, namespaceAddress } from './helpers/network.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

// Namespaces need root; CI runs as root and requires them (SLIPWAY_REQUIRE_SERVICES=1).
const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT && process.env.SLIPWAY_REQUIRE_SERVICES === '1') throw new Error('network isolation tests need root');
const PORT = 10000;
/** Another Slipway's range on this machine: its instances are on a private range reachable from the host. */
const OTHER_CIDR = '10.244.0.0/16';

type Target = { kind: 'tcp' | 'udp'; host: string; port: number };

/** A server on the host that notes every connection (TCP) or datagram (UDP) it receives in `hits`. */
async function hostListener(kind: 'tcp' | 'udp', host: string, hits: string[]) {
  if (kind === 'udp') {
    const socket = dgram.createSocket('udp4', (_, from) => hits.push(`udp ${host} from ${from.address}`));
    await new Promise<void>((resolve) => socket.bind(0, host, resolve));
    return { port: socket.address().port, close: () => socket.close() };
  }
  const server = net.createServer((s) => {
    hits.push(`tcp ${host} from ${s.remoteAddress}`);
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host, ipv6Only: false }, resolve));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

describe.runIf(IS_ROOT)('network isolation between workspaces', () => {
  const t = useServer({ SLIPWAY_NETWORK: 'namespaces' });
  const other = useServer({ SLIPWAY_NETWORK: 'namespaces', SLIPWAY_NETWORK_CIDR: OTHER_CIDR });
  const routerPort = () => t.server.slipway.routerPort;
  const instancesOf = async (as: TestUser, serviceId: string) =>
    (await t.api.get(`/v1/services/${serviceId}/instances`, as)).body.map((e: any) => e.id) as string[];
  /** Asks a tenant's prober app, through the router, to try something on the network. */
  const probe = async (slug: string, what: string, q: Record<string, string | number>) =>
    JSON.parse(
      (
        await viaRouter(
          routerPort(),
          slug,
          `/${what}?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`,
        )
      ).text,
    );

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
    const theirAddress = namespaceAddress(theirInstance!);
    expect(theirAddress, 'each instance has an address of its own').toMatch(/^10\.213\./);

    // Its own private service: by its slug, Render's internal hostname, on PORT.
    expect(await probe(web.service.slug, 'resolve', { name: mine.service.slug })).toEqual({
      ok: true,
      address: namespaceAddress(myInstance!),
    });
    expect(await probe(web.service.slug, 'connect', { host: mine.service.slug, port: PORT })).toEqual({ ok: true });

    // The internet by name, through slirp4netns's DNS forwarder (a host nameserver on loopback, as systemd-resolved's
    // 127.0.0.53, would be the namespace's own loopback).
    expect((await probe(web.service.slug, 'etc', { file: 'resolv.conf' })).text).toMatch(/^nameserver 10\.0\.2\.3$/m);
    expect(await probe(web.service.slug, 'resolve', { name: 'registry.npmjs.org' })).toMatchObject({ ok: true });

    // The other workspace's: no name, no route, even by address.
    expect((await probe(web.service.slug, 'resolve', { name: theirs.service.slug })).ok).toBe(false);
    expect(await probe(web.service.slug, 'connect', { host: theirAddress!, port: PORT })).toMatchObject({ ok: false });
    // Slipway's API and router on the host's loopback are out of reach, and no host socket is listed.
    const apiPort = Number(new URL(t.server.url).port);
    // By every way a namespace could get to the host: slirp4netns's host gateway (10.0.2.2 reaches the host's loopback
    // unless --disable-host-loopback), and the host's own address on the workspace's bridge.
    const gateway = namespaceAddress(myInstance!)!.replace(/\.\d+$/, '.1');
    for (const host of ['127.0.0.1', '10.0.2.2', gateway]) {
      for (const port of [apiPort, routerPort()])
        expect(await probe(web.service.slug, 'connect', { host, port }), `${host}:${port}`).toMatchObject({
          ok: false,
        });
    }
    // Nor cloud metadata credentials (link-local): refused at once by the namespace's route, not left to time out.
    expect(await probe(web.service.slug, 'connect', { host: '169.254.169.254', port: 80 })).toEqual({
      ok: false,
      error: 'EHOSTUNREACH',
    });
    const listening: string[] = await probe(web.service.slug, 'listening', {});
    expect(listening.map((l) => parseInt(l.split(':')[1]!, 16))).toEqual([PORT]);
  });

  it('reaches no address of the host, nor a private range, from an app or its build; its own network and DNS still work', async () => {
    const hits: string[] = [];
    const listeners = {
      any: await hostListener('tcp', '0.0.0.0', hits),
      any6: await hostListener('tcp', '::', hits),
      loopback: await hostListener('tcp', '127.0.0.1', hits),
      udp: await hostListener('udp', '0.0.0.0', hits),
    };
    try {
      const a = await signUp(t.api);
      // Another Slipway's instance, on its own range: a private address the host reaches, as would be a LAN's.
      const b = await signUp(other.api);
      const elsewhere = await deployFixture(other.api, b, 'net-prober', { type: 'private_service' });
      const [elsewhereInstance] = (await other.api.get(`/v1/services/${elsewhere.service.id}/instances`, b)).body;
      const privateAddress = namespaceAddress(elsewhereInstance.id, OTHER_CIDR)!;
      expect(privateAddress).toMatch(/^10\.244\./);

      const mine = await deployFixture(t.api, a, 'net-prober', { type: 'private_service' });
      expect(mine.deploy.status, mine.deploy.failureReason ?? '').toBe('live');
      const [myInstance] = await instancesOf(a, mine.service.id);
      const gateway = namespaceAddress(myInstance!)!.replace(/\.\d+$/, '.1');
      const throughTheWayOut = (host: string): Target[] => [
        { kind: 'tcp', host, port: listeners.any.port },
        { kind: 'tcp', host, port: listeners.any6.port },
        { kind: 'udp', host, port: listeners.udp.port },
      ];
      const targets: Target[] = [
        ...throughTheWayOut(gateway),
        ...hostAddresses().flatMap(throughTheWayOut),
        // slirp4netns's address for the host: its loopback, were --disable-host-loopback ever dropped.
        { kind: 'tcp', host: '10.0.2.2', port: listeners.loopback.port },
        { kind: 'tcp', host: '169.254.169.254', port: 80 },
        { kind: 'tcp', host: privateAddress, port: PORT },
      ];
      const web = await deployFixture(
        t.api,
        a,
        'net-prober',
        { serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand: 'node build-probe.js' } } },
        { 'build-targets.json': JSON.stringify(targets) },
      );
      expect(web.deploy.status, web.deploy.failureReason ?? '').toBe('live');

      // The app: the targets above, and the host's side of its bridge over IPv6 (the link-local addresses the kernel
      // gives an interface: the bridge's and each veth's).
      const linkLocals: Target[] = hostSideOf(gateway).map((link) => ({
        kind: 'tcp',
        host: linkLocalOf(link.mac, 'eth0'),
        port: listeners.any6.port,
      }));
      expect(linkLocals.length, 'the bridge and its veths').toBeGreaterThanOrEqual(3);
      // Nor has the host's side any IPv6 address to reach.
      const ipv6Of = (name: string) => (networkInterfaces()[name] ?? []).filter((i) => i.family === 'IPv6');
      expect(hostSideOf(gateway).flatMap((link) => ipv6Of(link.name))).toEqual([]);
      const fromApp: Array<Target & { result: { ok: boolean } }> = await probe(web.service.slug, 'many', {
        targets: JSON.stringify([...targets, ...linkLocals]),
      });
      expect.soft(fromApp.filter((p) => p.result.ok)).toEqual([]);
      // The build ran the same probes from its namespace.
      const built = await probe(web.service.slug, 'built', {});
      expect.soft(built.results.filter((p: { result: { ok: boolean } }) => p.result.ok)).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 200)); // a datagram in flight
      expect(hits).toEqual([]);

      // What still works: its own workspace's service by name, DNS through slirp4netns's forwarder (from the app and
      // the build), and the router's way in.
      expect(await probe(web.service.slug, 'connect', { host: mine.service.slug, port: PORT })).toEqual({ ok: true });
      expect(await probe(web.service.slug, 'query', { name: 'registry.npmjs.org' })).toMatchObject({ ok: true });
      expect(built.dns).toMatchObject({ ok: true });
    } finally {
      for (const l of Object.values(listeners)) l.close();
    }
  }, 120_000);

  it("a squatter cannot take a crashed instance's address, nor receive its requests", async () => {
    const [a, b] = [await signUp(t.api), await signUp(t.api)];
    const victim = await deployFixture(t.api, b, 'net-prober');
    const squatter = await deployFixture(t.api, a, 'net-prober');
    const [victimInstance] = await instancesOf(b, victim.service.id);
    const victimAddress = namespaceAddress(victimInstance!)!;
    // The squatter loops on binding the victim's address and port, and on its own namespace's every address.
    expect(await probe(squatter.service.slug, 'bind', { host: victimAddress, port: PORT })).toEqual({
      ok: false,
      error: 'EADDRNOTAVAIL',
    });
    await probe(squatter.service.slug, 'squat', { host: victimAddress, port: PORT, ms: 8000 });

    for (const pid of processesOf(victim.service.id)) process.kill(pid, 'SIGKILL');
    // Requests meant for the victim, with its users' cookies, while it is down and after it is back.
    const statuses: number[] = [];
    const until = Date.now() + 4000;
    while (Date.now() < until) {
      const reply = await viaRouter(routerPort(), victim.service.slug, '/secret', {
        headers: { cookie: 'session=victims-secret' },
      }).catch(() => undefined);
      if (reply) statuses.push(reply.status);
      await new Promise((r) => setTimeout(r, 20));
    }
    await waitFor(
      'the victim to be back',
      async () => (await viaRouter(routerPort(), victim.service.slug, '/')).status === 200,
      20_000,
    );
    const received: Array<{ squatted?: string; cookie?: string | null; host?: string }> = await probe(
      squatter.service.slug,
      'received',
      {},
    );
    expect(received.filter((r) => r.squatted)).toEqual([]);
    expect(
      received.filter((r) => r.cookie?.includes('victims-secret') || r.host?.startsWith(victim.service.slug)),
    ).toEqual([]);
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
