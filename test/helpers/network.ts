import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_NETWORK_CIDR } from '../../src/config.js';
import { DEFAULT_STATE_DIR } from '../../src/runtime/local/network/index.js';
import { hostAddress, instanceNetns, netnsPath, parseSupernet } from '../../src/runtime/local/network/plan.js';

/** The namespace Slipway leased to an instance (or datastore server), from the machine-wide lease files. */
export function leaseOf(id: string): { address: string; netns: string } | undefined {
  const net = parseSupernet(DEFAULT_NETWORK_CIDR);
  const subnets = list(DEFAULT_STATE_DIR).filter((d) => /^\d+$/.test(d));
  for (const subnet of subnets) {
    const dir = path.join(DEFAULT_STATE_DIR, subnet, 'leases');
    for (const file of list(dir).filter((f) => f.endsWith('.json'))) {
      const lease = read(path.join(dir, file));
      const [n, host] = [Number(subnet), Number(file.slice(0, -5))];
      if (lease?.id === id) return { address: hostAddress(net, n, host), netns: netnsPath(instanceNetns(n, host)) };
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
function read(file: string): { id: string } | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { id: string };
  } catch {
    return undefined;
  }
}

export const namespaceAddress = (id: string) => leaseOf(id)?.address;
