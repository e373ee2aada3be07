import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { DEFAULT_NETWORK_CIDR } from '../../src/app/config.js';
import { DEFAULT_STATE_DIR } from '../../src/runtime/local/network/index.js';
import { hostAddress, legacyNetns, netnsPath, parseSupernet } from '../../src/runtime/local/network/plan.js';

/** The namespace Slipway leased to an instance (or datastore server), from the machine-wide lease files. */
export function leaseOf(id: string, cidr = DEFAULT_NETWORK_CIDR): { address: string; netns: string } | undefined {
  const net = parseSupernet(cidr);
  const subnets = list(DEFAULT_STATE_DIR).filter((d) => /^\d+$/.test(d));
  for (const subnet of subnets) {
    const dir = path.join(DEFAULT_STATE_DIR, subnet, 'leases');
    for (const file of list(dir).filter((f) => f.endsWith('.json'))) {
      const lease = read(path.join(dir, file));
      const [n, host] = [Number(subnet), Number(file.slice(0, -5))];
      if (lease?.id === id)
        return { address: hostAddress(net, n, host), netns: netnsPath(lease.netns ?? legacyNetns(n, host)) };
    }
  }
  return undefined;
}

// Other test files' servers claim and release subnets while this reads: a subnet dir can exist before its leases
// dir, and a lease file can vanish (or be half written) between the listing and the read.
function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
function read(file: string): { id: string; netns?: string } | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { id: string; netns?: string };
  } catch {
    return undefined;
  }
}

export const namespaceAddress = (id: string, cidr?: string) => leaseOf(id, cidr)?.address;

/** The host's side of the bridge that holds `gateway`: the bridge and the veths plugged into it, with their MACs. */
export function hostSideOf(gateway: string): Array<{ name: string; mac: string }> {
  const bridge = Object.entries(networkInterfaces()).find(([, addrs]) =>
    addrs?.some((a) => a.family === 'IPv4' && a.address === gateway),
  )?.[0];
  if (!bridge) return [];
  const links = JSON.parse(execFileSync('ip', ['-j', 'link', 'show'], { encoding: 'utf8' })) as Array<{
    ifname: string;
    address: string;
    master?: string;
  }>;
  return links
    .filter((l) => l.ifname === bridge || l.master === bridge)
    .map((l) => ({ name: l.ifname, mac: l.address }));
}

/** The IPv6 link-local address the kernel gives an interface with this MAC (EUI-64), as a neighbour on `scope` sees it. */
export function linkLocalOf(mac: string, scope: string): string {
  const b = mac.split(':').map((h) => parseInt(h, 16));
  const eui = [b[0]! ^ 2, b[1]!, b[2]!, 0xff, 0xfe, b[3]!, b[4]!, b[5]!];
  const groups = [0, 2, 4, 6].map((i) => ((eui[i]! << 8) | eui[i + 1]!).toString(16));
  return `fe80::${groups.join(':')}%${scope}`;
}

/** This machine's own IPv4 addresses but loopback's and Slipways' bridges' (slw*): what slirp4netns could connect to. */
export const hostAddresses = () =>
  Object.entries(networkInterfaces())
    .filter(([name]) => !name.startsWith('slw'))
    .flatMap(([, addrs]) => addrs ?? [])
    .filter((a) => a.family === 'IPv4' && !a.internal)
    .map((a) => a.address);
