import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findProgram } from '../src/runtime/local/capabilities.js';
import { createNetworks, detectNetworkTools, type NetworkTools } from '../src/runtime/local/network/index.js';
import { bridgeName, parseSupernet, vethName } from '../src/runtime/local/network/plan.js';
import { hostAddresses } from './helpers/network.js';

// Namespaces need root; CI runs as root and requires them (SLIPWAY_REQUIRE_SERVICES=1).
const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT && process.env.SLIPWAY_REQUIRE_SERVICES === '1') throw new Error('namespace tests need root');

const PORT = 7000;
const dirs: string[] = [];

const children: ChildProcess[] = [];
const stateDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-net-names-'));
  dirs.push(dir);
  return dir;
};
/** A server in the namespace at `netnsPath`, as an instance: it answers what the host sends it. */
function echoIn(netnsPath: string) {
  const script = `require('net').createServer((s) => s.pipe(s)).listen(${PORT}, '0.0.0.0')`;
  children.push(spawn('nsenter', [`--net=${netnsPath}`, process.execPath, '-e', script], { stdio: 'ignore' }));
}
/** What the host gets back from the namespace at `address` (the router's way in). */
const talk = (address: string) =>
  new Promise<string>((resolve) => {
    const socket = net.connect({ host: address, port: PORT, timeout: 2000 });
    socket.once('connect', () => socket.write('hi\n'));
    socket.once('data', (data) => (socket.destroy(), resolve(data.toString().trim())));
    socket.once('timeout', () => (socket.destroy(), resolve('timed out')));
    socket.once('error', (err) => resolve(err.message));
  });
/** What a connection from inside the namespace at `netnsPath` to host:port ends in (`ok` or the error's code). */
const connectFrom = (netnsPath: string, host: string, port: number) => {
  const script = `require('net').connect(${port}, '${host}').on('connect', () => { console.log('ok'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })`;
  return execFileSync('nsenter', [`--net=${netnsPath}`, process.execPath, '-e', script], {
    encoding: 'utf8',
    timeout: 10_000,
  }).trim();
};
const ip = (...args: string[]) => execFileSync('ip', args, { encoding: 'utf8' });
const portsOf = (bridge: string) => ip('-o', 'link', 'show', 'master', bridge);

describe.runIf(IS_ROOT)('what Slipway makes on the machine', () => {
  let tools: NetworkTools;
  const nets: Array<ReturnType<typeof createNetworks>> = [];
  const make = async (
    cidr: string,
    dir: string,
    owner = `/tmp/names-${cidr.split('.')[1]}`,
    egressAllow?: string[],
  ) => {
    tools ??= (await detectNetworkTools(findProgram)) as NetworkTools;
    const made = createNetworks({ owner, cidr, tools, stateDir: dir, egressAllow });
    nets.push(made);
    return made;
  };
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    for (const n of nets) await n.sweep(() => false);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('lets two Slipways with different ranges and state dirs (containers on the host network) each have subnet 0', async () => {
    const a = await make('10.232.0.0/16', stateDir());
    const b = await make('10.233.0.0/16', stateDir());
    const x = await a.attach('ins-x', 'tea-x', ['x']);
    echoIn(x.netnsPath);
    await expect.poll(() => talk(x.address), { timeout: 5000 }).toBe('hi');
    const y = await b.attach('ins-y', 'tea-y', ['y']);
    echoIn(y.netnsPath);
    expect([x.address, y.address]).toEqual(['10.232.0.2', '10.233.0.2']);
    // Neither took the other's bridge, veth or namespace: both still answer.
    await expect.poll(() => talk(y.address), { timeout: 5000 }).toBe('hi');
    expect(await talk(x.address)).toBe('hi');
    expect(existsSync(x.netnsPath)).toBe(true);
    expect(portsOf(bridgeName(parseSupernet('10.232.0.0/16'), 0))).toMatch(/slwv/);

    // One Slipway's sweep (its start after a crash) leaves the other's alone.
    await a.sweep(() => false);
    expect(existsSync(x.netnsPath)).toBe(false);
    expect(await talk(y.address)).toBe('hi');
    await b.sweep(() => false);
  });

  it('re-adopts what a Slipway made before names carried the range: its instance keeps answering, and gets the filter', async () => {
    // As the earlier Slipway left it: subnet 250, its claim and lease naming nothing, bridge slwbr250, namespace slw-250-2.
    const dir = stateDir();
    const owner = '/tmp/names-legacy';
    const [bridge, netns, veth, address] = ['slwbr250', 'slw-250-2', 'slwv250x2', '10.234.250.2'];
    mkdirSync(path.join(dir, '250', 'leases'), { recursive: true });
    writeFileSync(path.join(dir, '250', 'claim.json'), JSON.stringify({ owner, workspaceId: 'tea-old' }));
    writeFileSync(
      path.join(dir, '250', 'leases', '2.json'),
      JSON.stringify({ id: 'ins-old', kind: 'instance', hostnames: ['old'] }),
    );
    const batch = (lines: string[], ns?: string) =>
      execFileSync('ip', [...(ns ? ['-n', ns] : []), '-batch', '-'], { input: lines.join('\n') + '\n' });
    batch([
      `link add ${bridge} type bridge`,
      `addr add 10.234.250.1/24 dev ${bridge}`,
      `link set ${bridge} up`,
      `netns add ${netns}`,
      `link add ${veth} type veth peer name eth0 netns ${netns}`,
      `link set ${veth} master ${bridge} up`,
    ]);
    batch([`addr add ${address}/24 dev eth0`, 'link set eth0 up', 'link set lo up'], netns);
    echoIn(`/run/netns/${netns}`);
    await expect.poll(() => talk(address), { timeout: 5000 }).toBe('hi');

    const upgraded = await make('10.234.0.0/16', dir, owner);
    expect(upgraded.addressOf('ins-old')).toBe(address);
    // The bridge loses its IPv6 link-local address, the namespace gets the egress filter; the instance keeps answering.
    await expect.poll(() => ip('-6', '-o', 'addr', 'show', 'dev', bridge), { timeout: 5000 }).toBe('');
    await expect
      .poll(() => execFileSync('ip', ['netns', 'exec', netns, 'nft', 'list', 'tables'], { encoding: 'utf8' }), {
        timeout: 5000,
      })
      .toMatch(/inet slipway/);
    expect(await talk(address)).toBe('hi');
    // A new instance of that workspace joins the same bridge, under a name of the range.
    const next = await upgraded.attach('ins-new', 'tea-old', ['new']);
    expect(path.basename(next.netnsPath)).toBe('slw-10.234.250.3');
    expect(portsOf(bridge)).toContain(`${vethName(parseSupernet('10.234.0.0/16'), 250, 3)}@`);
    expect(portsOf(bridge)).toContain(`${veth}@`);
    // Both go, and with the last one the bridge.
    for (const child of children) child.kill('SIGKILL'); // a process in it would keep the namespace's veth
    await upgraded.release('ins-old');
    await upgraded.release('ins-new');
    expect(existsSync(`/run/netns/${netns}`)).toBe(false);
    expect(ip('-o', 'link', 'show')).not.toMatch(new RegExp(`${bridge}[:@]`));
  });

  it("opens to builds only what SLIPWAY_EGRESS_ALLOW lists of the host's and private addresses", async () => {
    const hostAddress = hostAddresses()[0];
    expect(hostAddress, 'this machine has an address besides loopback').toBeDefined();
    const listener = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
    const port = (listener.address() as net.AddressInfo).port;
    try {
      const closed = await make('10.235.0.0/16', stateDir());
      const open = await make('10.236.0.0/16', stateDir(), '/tmp/names-open', [`${hostAddress}/32`]);
      for (const n of [closed, open]) await n.close(); // no spare build namespaces
      const [shut, allowed] = [await closed.attachBuild(), await open.attachBuild()];
      try {
        expect(connectFrom(shut.netnsPath, hostAddress!, port)).toBe('ECONNREFUSED');
        expect(connectFrom(allowed.netnsPath, hostAddress!, port)).toBe('ok');
      } finally {
        await shut.release();
        await allowed.release();
        for (const n of [closed, open]) await n.close(); // their removal, which release() leaves running
      }
    } finally {
      listener.close();
    }
  });

  it('says why the filter is missing when nft is', async () => {
    const found = await detectNetworkTools((name) => (name === 'nft' ? undefined : findProgram(name)));
    expect(found).toMatchObject({ nftMissing: expect.stringContaining('apt-get install nftables') });
    expect((found as NetworkTools).nft).toBeUndefined();
    expect(await detectNetworkTools(findProgram)).toMatchObject({ nft: expect.stringMatching(/nft$/) });
  });
});
