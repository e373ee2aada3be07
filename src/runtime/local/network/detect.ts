import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { run } from '../../../lib/exec.js';
import { createEgressFilter } from './egress.js';
import * as plan from './plan.js';

export interface NetworkTools {
  ip: string;
  slirp4netns: string;
  nsenter: string;
  /** nftables, for the namespaces' egress filter (egress.ts); without it, a note says what namespaces can reach. */
  nft?: string;
}

const PROBE_NET = plan.parseSupernet('10.0.0.0/16');

/** Whether new links get IPv6 addresses here (plan.bridgeUp then takes them away from the host's side). */
export function givesLinksIPv6(): boolean {
  try {
    return readFileSync('/proc/sys/net/ipv6/conf/default/disable_ipv6', 'utf8').trim() === '0';
  } catch {
    return false; // no IPv6 in this kernel
  }
}

/**
 * The programs namespaces need, or why they cannot be made here (root, iproute2, slirp4netns, nsenter, a working netns).
 * nft is kept only when it loads the egress filter in a namespace; else `nftMissing` says why.
 */
export async function detectNetworkTools(
  find: (name: string) => string | undefined,
): Promise<(NetworkTools & { nftMissing?: string }) | string> {
  if (process.getuid?.() !== 0) return 'Slipway is not running as root, so it cannot create network namespaces';
  const tools = { ip: find('ip'), slirp4netns: find('slirp4netns'), nsenter: find('nsenter') };
  const missing = Object.entries(tools)
    .filter(([, file]) => !file)
    .map(([name]) => name);
  if (missing.length > 0)
    return `${missing.join(', ')} not found (Debian: ${missing.map((m) => (m === 'ip' ? 'iproute2' : m === 'nsenter' ? 'util-linux' : m)).join(', ')})`;
  const probe = `slwp-${randomBytes(4).toString('hex')}`;
  const made = await run({ file: tools.ip!, args: ['netns', 'add', probe], env: {} }, { timeoutMs: 10_000 });
  const nft = find('nft');
  let filtered: { exitCode: number | null; output: string } | undefined;
  try {
    // The egress filter, loaded where it will be: a kernel without nf_tables fails here, not at the first deploy.
    const filter = nft && createEgressFilter({ nsenter: tools.nsenter!, nft, net: PROBE_NET, allow: [] });
    if (made.exitCode === 0 && filter)
      filtered = await run(filter.load(plan.netnsPath(probe), 'build'), { timeoutMs: 10_000 });
  } finally {
    await run({ file: tools.ip!, args: ['netns', 'del', probe], env: {} }, { timeoutMs: 10_000 });
  }
  if (made.exitCode !== 0) return `\`ip netns add\` failed: ${made.output.trim()}`;
  if (!existsSync('/run/netns')) return '/run/netns is missing after `ip netns add`';
  const found = tools as NetworkTools;
  if (!nft) return { ...found, nftMissing: 'nft not found (Debian: apt-get install nftables)' };
  if (filtered?.exitCode !== 0)
    return { ...found, nftMissing: `nft could not load a ruleset in a namespace: ${filtered?.output.trim()}` };
  return { ...found, nft };
}
