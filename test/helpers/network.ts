import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_NETWORK_CIDR } from '../../src/config.js';
import { DEFAULT_STATE_DIR } from '../../src/runtime/local/network/index.js';
import { hostAddress, instanceNetns, netnsPath, parseSupernet } from '../../src/runtime/local/network/plan.js';

/** The namespace Slipway leased to an instance (or datastore server), from the machine-wide lease files. */
export function leaseOf(id: string): { address: string; netns: string } | undefined {
  const net = parseSupernet(DEFAULT_NETWORK_CIDR);
  const subnets = readdirSync(DEFAULT_STATE_DIR).filter((d) => /^\d+$/.test(d));
  for (const subnet of subnets) {
    const dir = path.join(DEFAULT_STATE_DIR, subnet, 'leases');
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
      const lease = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { id: string };
      const [n, host] = [Number(subnet), Number(file.slice(0, -5))];
      if (lease.id === id) return { address: hostAddress(net, n, host), netns: netnsPath(instanceNetns(n, host)) };
    }
  }
  return undefined;
}

export const namespaceAddress = (id: string) => leaseOf(id)?.address;
