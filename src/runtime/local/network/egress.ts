import { networkInterfaces } from 'node:os';
import type { Command } from '../../../lib/exec.js';
import { formatIPv4, ipv4Range, mergeRanges, type IPv4Range } from '../../../lib/ip-ranges.js';
import type { Exit } from './leases.js';
import * as plan from './plan.js';

/**
 * What a namespace may open connections to, as an nftables ruleset loaded inside it: the namespace is Slipway's own, so
 * this changes no setting of the machine, and its processes (nobody, no CAP_NET_ADMIN) cannot change it.
 *
 * Refused: the host through the bridge's gateway (.1) and anything else of the supernet but the workspace's own
 * instances; through slirp4netns (whose sockets are the host's), every address that leads to the machine or its
 * networks rather than the internet (loopback, private, CGNAT, link-local with cloud metadata, multicast, reserved)
 * and the host's own addresses, which a socket on the host reaches whatever they are; and all of IPv6 but loopback (nothing routes it out, and the host's link-local
 * addresses answer on its listeners bound to [::]). Allowed before that: slirp4netns's DNS forwarder, and the ranges
 * the operator opens (SLIPWAY_EGRESS_ALLOW, for a private git server or package mirror). A datastore server gets
 * neither, nor the internet: only its `exits` (its backups' S3 endpoint, one address and port each), when it has a way
 * out at all.
 *
 * Only new connections are refused (a TCP SYN without ACK, and any datagram): the router and Slipway's checks connect
 * from the gateway, and the replies must pass. Nothing is kept per connection (no conntrack), so it costs nothing per
 * packet beyond the rule walk. A TCP connect is answered with a reset (ECONNREFUSED at once), a datagram is dropped
 * (EPERM on send).
 */
export type EgressKind = 'instance' | 'server' | 'build';

/**
 * IPv4 blocks that lead to this machine, its LAN or its provider's network rather than the internet, refused to every
 * namespace. Not the documentation and benchmarking blocks: a machine's resolver may answer public names with such an
 * address (a proxy in front of the internet answers at 203.0.113.80 on Slipway's own dev machines, fake-IP proxies use
 * 198.18/15), and they lead nowhere else.
 */
export const NOT_THE_INTERNET_CIDRS = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private; slirp4netns's own 10.0.2.0/24 (10.0.2.2 is the host) too
  '100.64.0.0/10', // carrier-grade NAT (a provider's network, a tailnet)
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local: cloud metadata at 169.254.169.254
  '172.16.0.0/12', // private
  '192.168.0.0/16', // private
  '224.0.0.0/4', // multicast: a bridge floods it to the host
  '240.0.0.0/4', // reserved, and 255.255.255.255
];
export const NOT_THE_INTERNET = NOT_THE_INTERNET_CIDRS.map((cidr) => ipv4Range(cidr)!);

/** What a namespace may not open a connection to (before the allowed ones are taken out): see NOT_THE_INTERNET. */
export const refusedRanges = (net: plan.Supernet, host: IPv4Range[]) =>
  mergeRanges([...NOT_THE_INTERNET, ipv4Range(net.cidr)!, ...host]);

/** The host's own IPv4 addresses, read when a namespace is made (an address added later is refused from then on). */
export const hostAddresses = (): IPv4Range[] =>
  Object.values(networkInterfaces())
    .flatMap((addrs) => addrs ?? [])
    .filter((a) => a.family === 'IPv4')
    .map((a) => ipv4Range(a.address)!);

const set = (ranges: IPv4Range[]) =>
  `{ ${ranges.map((r) => (r.first === r.last ? formatIPv4(r.first) : `${formatIPv4(r.first)}-${formatIPv4(r.last)}`)).join(', ')} }`;

/** The ruleset for one namespace (its table replaced whole, so loading it again is harmless). */
export function egressRuleset(opts: {
  net: plan.Supernet;
  kind: EgressKind;
  /** The workspace's subnet (instances and servers): its other namespaces stay reachable. */
  subnet?: number;
  allow: IPv4Range[];
  host: IPv4Range[];
  exits?: Exit[] | undefined;
}): string {
  const { net, subnet } = opts;
  const refused = refusedRanges(net, opts.host);
  const accepted = [
    'oifname "lo" accept',
    ...(subnet === undefined
      ? []
      : [
          `ip daddr ${plan.hostAddress(net, subnet, plan.FIRST_HOST)}-${plan.hostAddress(net, subnet, plan.LAST_HOST)} accept`,
        ]),
    ...(opts.kind === 'server'
      ? []
      : [`ip daddr ${plan.SLIRP_DNS} udp dport 53 accept`, `ip daddr ${plan.SLIRP_DNS} tcp dport 53 accept`]),
    ...(opts.kind === 'server' || opts.allow.length === 0 ? [] : [`ip daddr ${set(mergeRanges(opts.allow))} accept`]),
    ...(opts.kind === 'server' ? (opts.exits ?? []) : []).map(
      (exit) => `ip daddr ${formatIPv4(ipv4Range(exit.address)!.first)} tcp dport ${exit.port} accept`,
    ),
  ];
  return [
    'table inet slipway',
    'delete table inet slipway',
    'table inet slipway {',
    '  chain refuse {',
    '    tcp flags & (syn | ack) == syn reject with tcp reset',
    '    meta l4proto != tcp drop',
    '  }',
    '  chain egress {',
    '    type filter hook output priority filter; policy accept;',
    ...accepted.map((rule) => `    ${rule}`),
    `    ip daddr ${set(refused)} jump refuse`,
    '    meta nfproto ipv6 jump refuse',
    // A server opens no connection but to its exits: the internet too is refused (its replies pass, as above).
    ...(opts.kind === 'server' ? ['    jump refuse'] : []),
    '  }',
    '}',
    '',
  ].join('\n');
}

/** The namespaces' filter: `load` is the command that puts it in place in one namespace. */
export function createEgressFilter(opts: { nsenter: string; nft: string; net: plan.Supernet; allow: string[] }) {
  const allow = opts.allow.map((cidr) => ipv4Range(cidr)!);
  return {
    load: (netnsPath: string, kind: EgressKind, subnet?: number, exits?: Exit[]): Command => ({
      file: opts.nsenter,
      args: [`--net=${netnsPath}`, '--', opts.nft, '-f', '-'],
      env: {},
      stdin: egressRuleset({ net: opts.net, kind, subnet, allow, host: hostAddresses(), exits }),
    }),
  };
}
export type EgressFilter = ReturnType<typeof createEgressFilter>;
