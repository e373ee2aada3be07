import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findProgram } from '../src/runtime/local/capabilities.js';
import {
  createNetworks,
  DEFAULT_STATE_DIR,
  detectNetworkTools,
  type NetworkTools,
} from '../src/runtime/local/network/index.js';
import { createLeaseFiles } from '../src/runtime/local/network/leases.js';
import { bridgeName, parseSupernet, vethName } from '../src/runtime/local/network/plan.js';

// Namespaces need root; CI runs as root and requires them (SLIPWAY_REQUIRE_SERVICES=1).
const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT && process.env.SLIPWAY_REQUIRE_SERVICES === '1') throw new Error('namespace tests need root');

const CIDR = '10.231.0.0/16';
const NET = parseSupernet(CIDR);
const namespaces = () => (existsSync('/run/netns') ? readdirSync('/run/netns') : []);
const owner = `/tmp/spares-owner-${process.pid}`;
/**
 * The machine-wide state dir, as every Slipway here uses it: subnets are claimed there, so this test's bridge and
 * namespaces never take the names of another test server's running meanwhile (a private dir would hand out the same
 * subnet numbers, and each would remove the other's as leftovers).
 */
const files = createLeaseFiles(DEFAULT_STATE_DIR, NET);
/** This test's build namespaces (others run builds on this machine meanwhile): the ones recorded under its owner. */
const ourBuilds = () =>
  files
    .ownedBuilds(owner)
    .map((b) => b.name)
    .filter((name) => namespaces().includes(name));
const links = () => execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });

describe.runIf(IS_ROOT)('namespaces made ahead of need', () => {
  let tools: NetworkTools;
  const make = async () => {
    tools ??= (await detectNetworkTools(findProgram)) as NetworkTools;
    return createNetworks({ owner, cidr: CIDR, tools });
  };
  afterAll(async () => {
    await (await make()).sweep(() => false);
  });

  it("gives a workspace's next instance the namespace made after its last one, and drops it with the last instance", async () => {
    const nets = await make();
    const first = await nets.attach('ins-a', 'tea-spares', ['web-a']);
    // The spare comes up in the background: its namespace is the next address on the bridge.
    const spareNs = first.netnsPath.replace(/\.(\d+)$/, (_, host) => `.${Number(host) + 1}`);
    await expect.poll(() => namespaces().includes(path.basename(spareNs)), { timeout: 10_000 }).toBe(true);
    const second = await nets.attach('ins-b', 'tea-spares', ['web-b']);
    expect(second.netnsPath).toBe(spareNs); // taken, not made anew
    expect(nets.addressOf('ins-b')).toBe(second.address);
    // Its instance is reachable by its own hostname on the workspace's network.
    expect(execFileSync('cat', [second.hostsFile], { encoding: 'utf8' })).toMatch(`${second.address} web-b`);
    const subnet = first.address.split('.')[2];
    const ours = () => namespaces().filter((n) => n.startsWith(`slw-10.231.${subnet}.`));
    await expect.poll(() => ours().length, { timeout: 10_000 }).toBe(3); // a, b and b's spare

    await nets.release('ins-a');
    await nets.release('ins-b');
    // The spare went with the last instance, and with it the bridge.
    expect(ours()).toEqual([]);
    expect(links()).not.toMatch(new RegExp(`${bridgeName(NET, Number(subnet))}:`));
  });

  it('keeps two build namespaces ready (a git clone and its build), never hands one to two builds, and removes them on close', async () => {
    const nets = await make();
    const [a, b] = await Promise.all([nets.attachBuild(), nets.attachBuild()]);
    expect(a.netnsPath).not.toBe(b.netnsPath);
    await a.release();
    await b.release();
    const released = [a, b].map((ns) => path.basename(ns.netnsPath));
    const isSpare = (name: string) => !released.includes(name);
    await expect.poll(() => ourBuilds().filter(isSpare).length, { timeout: 10_000 }).toBe(2);
    await expect.poll(() => ourBuilds().length, { timeout: 10_000 }).toBe(2); // the released ones are gone
    const spares = ourBuilds();
    // A sweep (a start after a crash) removes other processes' builds, not the spares this one holds.
    await nets.sweep(() => true);
    for (const spare of spares) expect(namespaces()).toContain(spare);
    const next = await nets.attachBuild();
    expect(spares.map((spare) => `/run/netns/${spare}`)).toContain(next.netnsPath);
    await next.release();
    await nets.close();
    expect(ourBuilds()).toEqual([]);
  });

  it("releases a build's namespace without waiting for its removal, which close() waits for", async () => {
    const nets = await make();
    const build = await nets.attachBuild();
    const name = path.basename(build.netnsPath);
    await build.release();
    // The build has ended: its deploy goes on while `ip netns del` runs.
    expect(namespaces()).toContain(name);
    await nets.close();
    expect(namespaces()).not.toContain(name);
    expect(ourBuilds()).toEqual([]);
  });

  it("keeps the bridge's MAC as instances come and go: a survivor's replies still reach the host", async () => {
    // Without the egress filter, which would refuse the namespaces' connections to the host: this is about the bridge.
    await make();
    const nets = createNetworks({ owner, cidr: CIDR, tools: { ...tools, nft: undefined } });
    const x = await nets.attach('ins-x', 'tea-mac', ['web-x']);
    const subnet = x.address.split('.')[2];
    const bridge = (file: string) =>
      readFileSync(`/sys/class/net/${bridgeName(NET, Number(subnet))}/${file}`, 'utf8').trim();
    // Set (NET_ADDR_SET), not taken from a port: the kernel then never changes it as ports come and go.
    expect(bridge('addr_assign_type')).toBe('3');
    const mac = bridge('address');
    const y = await nets.attach('ins-y', 'tea-mac', ['web-y']);

    // The host answers on the gateway address; each namespace talks to it, and learns the gateway's MAC doing so.
    const gateway = x.address.replace(/\.\d+$/, '.1');
    const echo = net.createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, gateway, resolve));
    const port = (echo.address() as net.AddressInfo).port;
    const talk = (attachment: { netnsPath: string }) =>
      new Promise<string>((resolve) =>
        execFile(
          'ip',
          [
            'netns',
            'exec',
            path.basename(attachment.netnsPath),
            'bash',
            '-c',
            `exec 3<>/dev/tcp/${gateway}/${port}; echo hi >&3; read -t 2 line <&3; echo "$line"`,
          ],
          { encoding: 'utf8', timeout: 5000 },
          (err, stdout) => resolve(err ? `failed: ${err.message}` : stdout.trim()),
        ),
      );
    try {
      expect(await talk(x)).toBe('hi');
      expect(await talk(y)).toBe('hi');
      // A roll-over: the old instance's namespace (and its port on the bridge) goes; the new one keeps talking.
      // The one whose port has the lower MAC goes: left to itself, the kernel would have given the bridge that MAC.
      const portMac = (a: { address: string }) =>
        readFileSync(
          `/sys/class/net/${vethName(NET, Number(subnet), Number(a.address.split('.')[3]))}/address`,
          'utf8',
        );
      const [gone, survivor] = portMac(x) < portMac(y) ? (['ins-x', y] as const) : (['ins-y', x] as const);
      await nets.release(gone);
      expect(bridge('address')).toBe(mac);
      expect(await talk(survivor)).toBe('hi');
    } finally {
      echo.close();
      await nets.release('ins-x');
      await nets.release('ins-y');
    }
  });
});
