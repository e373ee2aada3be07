import { ipv4Range } from '../../lib/ip-ranges.js';
import { NOT_THE_INTERNET_CIDRS } from '../local/network/egress.js';

/**
 * What each node of a swarm must add to its firewall so that tasks reach the internet but not their node's own
 * services nor the networks behind it (docs/swarm.md, "Egress"). A task leaves its node through `docker_gwbridge`:
 * - to the node itself (INPUT): only replies to what the node opened (the router's connections, a published port);
 * - onwards (FORWARD, through Docker's DOCKER-USER chain): not to the ranges that are not the internet (the nodes'
 *   LAN, private and link-local ranges: cloud metadata), except `allow` (the resolver the nodes use, a registry).
 * Its own overlay traffic never crosses these chains.
 *
 * A shell script for the node's root (`npm run swarm:node-guard`): `iptables-restore --noflush` replaces Slipway's two
 * chains whole, and each jump is added once, so running it again is harmless.
 */
export function nodeGuardScript(allow: string[] = []): string {
  for (const entry of allow) if (!ipv4Range(entry)) throw new Error(`not an IPv4 address or CIDR: ${entry}`);
  const rules = [
    '*filter',
    ':SLIPWAY-TASKS-IN - [0:0]',
    ':SLIPWAY-TASKS-OUT - [0:0]',
    '-A SLIPWAY-TASKS-IN -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN',
    ...allow.map((a) => `-A SLIPWAY-TASKS-IN -d ${a} -j RETURN`),
    '-A SLIPWAY-TASKS-IN -j DROP',
    '-A SLIPWAY-TASKS-OUT -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN',
    ...allow.map((a) => `-A SLIPWAY-TASKS-OUT -d ${a} -j RETURN`),
    ...NOT_THE_INTERNET_CIDRS.map((cidr) => `-A SLIPWAY-TASKS-OUT -d ${cidr} -j DROP`),
    'COMMIT',
  ];
  const jump = (chain: string, to: string) =>
    `iptables -C ${chain} -i docker_gwbridge -j ${to} 2>/dev/null || iptables -I ${chain} -i docker_gwbridge -j ${to}`;
  return [
    'set -e',
    "iptables-restore --noflush <<'RULES'",
    ...rules,
    'RULES',
    jump('INPUT', 'SLIPWAY-TASKS-IN'),
    // dockerd makes DOCKER-USER at its start, and keeps what is in it.
    'iptables -N DOCKER-USER 2>/dev/null || true',
    jump('DOCKER-USER', 'SLIPWAY-TASKS-OUT'),
    '',
  ].join('\n');
}
