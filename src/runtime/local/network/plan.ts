import type { Command } from '../../../lib/exec.js';

/**
 * The network plan as data: addresses and names derived from a workspace's subnet index and an instance's host
 * number, and the `ip` / `slirp4netns` commands that build and remove them. Nothing here touches the machine.
 *
 * One /16 (SLIPWAY_NETWORK_CIDR) is cut into /24s, one per workspace that runs something on this machine:
 * the bridge holds .1 (the host's leg, which the router and Slipway's checks use), instances get .2–.254.
 */
export interface Supernet {
  /** The first two octets, e.g. [10, 213]. */
  prefix: [number, number];
  cidr: string;
}

export function parseSupernet(cidr: string): Supernet {
  const m = /^(\d{1,3})\.(\d{1,3})\.0\.0\/16$/.exec(cidr.trim());
  const a = Number(m?.[1]);
  const b = Number(m?.[2]);
  if (!m || a > 255 || b > 255)
    throw new Error(`SLIPWAY_NETWORK_CIDR must be a /16 such as 10.213.0.0/16, got ${JSON.stringify(cidr)}`);
  // A range that is not the internet, so the namespaces' filter refuses it through the way out (egress.ts): another
  // Slipway's range on this machine is then out of reach too. Not loopback (the host's table would win over the bridge).
  if (!PRIVATE_SUPERNETS.some(([pa, pb, bits]) => a === pa && b >> (8 - bits) === pb >> (8 - bits)))
    throw new Error(
      `SLIPWAY_NETWORK_CIDR cannot be ${cidr}: pick a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10) such as 10.213.0.0/16`,
    );
  return { prefix: [a, b], cidr: `${a}.${b}.0.0/16` };
}

/** The blocks a supernet may be cut from: first octet, second octet, and how many bits of the second are fixed. */
const PRIVATE_SUPERNETS: Array<[number, number, number]> = [
  [10, 0, 0],
  [172, 16, 4],
  [192, 168, 8],
  [100, 64, 2],
];

export const SUBNETS = 256;
export const FIRST_HOST = 2;
export const LAST_HOST = 254;

const hex = (...bytes: number[]) => bytes.map((n) => n.toString(16).padStart(2, '0')).join('');
/**
 * Names carry the supernet as well as the subnet, so two Slipways with different ranges on one machine (different
 * state dirs: containers sharing the host's network) never take each other's. At most 15 characters (IFNAMSIZ).
 */
export const bridgeName = (net: Supernet, subnet: number) => `slwbr${hex(...net.prefix, subnet)}`;
/** The host's end of an instance's veth pair. */
export const vethName = (net: Supernet, subnet: number, host: number) => `slwv${hex(...net.prefix, subnet, host)}`;
export const instanceNetns = (net: Supernet, subnet: number, host: number) => `slw-${hostAddress(net, subnet, host)}`;
/** The names before they carried the supernet: a Slipway restarted after an upgrade re-adopts what it made under them. */
export const legacyBridgeName = (subnet: number) => `slwbr${subnet}`;
export const legacyNetns = (subnet: number, host: number) => `slw-${subnet}-${host}`;
export const netnsPath = (name: string) => `/run/netns/${name}`;
export const hostAddress = (net: Supernet, subnet: number, host: number) =>
  `${net.prefix[0]}.${net.prefix[1]}.${subnet}.${host}`;
export const gatewayAddress = (net: Supernet, subnet: number) => hostAddress(net, subnet, 1);

const ip = (ipPath: string, ...args: string[]): Command => ({ file: ipPath, args, env: {} });
/** Several `ip` commands in one process (`-batch -`, one per line), inside namespace `ns` when given: a spawn costs more than the work. */
const ipBatch = (ipPath: string, ns: string | undefined, lines: string[][]): Command => ({
  file: ipPath,
  args: [...(ns ? ['-n', ns] : []), '-batch', '-'],
  env: {},
  stdin: lines.map((l) => l.join(' ')).join('\n') + '\n',
});

/**
 * The bridge's MAC address, set rather than left to the kernel, which otherwise gives the bridge its lowest port's
 * and changes it when that port goes. A roll-over removes the old instance's veth: the new instance still sent its
 * replies to the MAC it had learnt for the host's address, and they were dropped until its ARP entry expired (a
 * request through the router hung for seconds). Locally administered, made of the gateway's address: unique per bridge.
 */
export const bridgeMac = (net: Supernet, subnet: number) =>
  [
    '02',
    '5c',
    ...gatewayAddress(net, subnet)
      .split('.')
      .map((octet) => Number(octet).toString(16).padStart(2, '0')),
  ].join(':');

/**
 * No IPv6 address on the host's side of a link, not even a link-local one: a namespace on the bridge would reach the
 * host's listeners bound to [::] through it. Only where the machine gives new links IPv6 (else the command fails).
 */
const noIPv6 = (link: string) => [['link', 'set', link, 'addrgenmode', 'none']];

/** The workspace's bridge, named `name`, with the host's address on it (layer 2 only: nothing is routed through the host). */
export function bridgeUp(ipPath: string, net: Supernet, subnet: number, name: string, ipv6: boolean): Command[] {
  return [
    ipBatch(ipPath, undefined, [
      ['link', 'add', name, 'type', 'bridge'],
      ['link', 'set', name, 'address', bridgeMac(net, subnet)],
      ...(ipv6 ? noIPv6(name) : []),
      ['addr', 'add', `${gatewayAddress(net, subnet)}/24`, 'dev', name],
      ['link', 'set', name, 'up'],
    ]),
  ];
}

/**
 * A bridge made by an earlier Slipway, re-adopted: its MAC pinned (made before bridgeMac) and its IPv6 link-local
 * address gone (made before noIPv6). The same again changes nothing; what fails (a link gone meanwhile) is skipped.
 */
export const settleBridge = (ipPath: string, net: Supernet, subnet: number, name: string, ipv6: boolean): Command => ({
  ...ipBatch(ipPath, undefined, [
    ['link', 'set', name, 'address', bridgeMac(net, subnet)],
    ...(ipv6 ? [...noIPv6(name), ['addr', 'flush', 'dev', name, 'scope', 'link']] : []),
  ]),
  args: ['-force', '-batch', '-'],
});
export const linkDel = (ipPath: string, name: string): Command => ip(ipPath, 'link', 'del', name);

/**
 * A namespace of its own for one instance (or datastore server), plugged into its workspace's bridge as eth0: `host`
 * makes the namespace and the veth pair, `inside` addresses it. The rest of the supernet is unreachable from inside:
 * without that route, a packet for another workspace's subnet would leave through slirp4netns, which connects from
 * the host, where every bridge is directly reachable (the egress filter refuses it too).
 */
export function instanceUp(
  ipPath: string,
  net: Supernet,
  at: { subnet: number; host: number; bridge: string; ipv6: boolean },
): { host: Command; inside: Command } {
  const ns = instanceNetns(net, at.subnet, at.host);
  const veth = vethName(net, at.subnet, at.host);
  return {
    host: ipBatch(ipPath, undefined, [
      ['netns', 'add', ns],
      ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns],
      ...(at.ipv6 ? noIPv6(veth) : []),
      ['link', 'set', veth, 'master', at.bridge, 'up'],
    ]),
    inside: ipBatch(ipPath, ns, [
      ['addr', 'add', `${hostAddress(net, at.subnet, at.host)}/24`, 'dev', 'eth0'],
      ['link', 'set', 'eth0', 'up'],
      ...isolation(net),
    ]),
  };
}

/** What every namespace gets: loopback up; the supernet unreachable, and link-local (cloud metadata credentials at 169.254.169.254). */
const isolation = (net: Supernet) => [
  ['link', 'set', 'lo', 'up'],
  ['route', 'add', 'unreachable', net.cidr],
  ['route', 'add', 'unreachable', '169.254.0.0/16'],
];
/** A namespace with no interface but loopback (a build's, before slirp4netns gives it a way out). */
export const isolatedNetns = (ipPath: string, ns: string, net: Supernet) => ({
  host: ip(ipPath, 'netns', 'add', ns),
  inside: ipBatch(ipPath, ns, isolation(net)),
});

/** Deleting the namespace destroys the veth inside it, and with it the host's end. */
export const netnsDel = (ipPath: string, ns: string): Command => ip(ipPath, 'netns', 'del', ns);

/**
 * The namespace's way out (user-mode TCP/IP, as rootless podman uses it): connections leave as ordinary sockets of
 * this process, and never reach the host's loopback. Its seccomp filter confines it further; its --enable-sandbox
 * is not used: its mount namespace's unmounts propagate to the host's /run/netns and break the namespace's bind mount.
 */
export const slirpCommand = (slirpPath: string, ns: string, hostLoopback = false): Command => ({
  file: slirpPath,
  // --ready-fd: it writes there once the namespace has its address and default route. The host's loopback (at
  // SLIRP_HOST) only for a server whose one way out is there; its egress filter lets only that port through.
  args: [
    '--configure',
    '--mtu=65520',
    ...(hostLoopback ? [] : ['--disable-host-loopback']),
    '--enable-seccomp',
    '--ready-fd=3',
    '--netns-type=path',
    netnsPath(ns),
    'tap0',
  ],
  env: {},
});

/** The host's 127.0.0.1 as slirp4netns shows it (when the host's loopback is not disabled). */
export const SLIRP_HOST = '10.0.2.2';
/** Where a namespace with a way out reaches `address` of the host's: its loopback through SLIRP_HOST, the rest as is. */
export function throughSlirp(address: string): string {
  if (address === '127.0.0.1') return SLIRP_HOST;
  if (address.startsWith('127.'))
    throw new Error(`a namespace reaches the host's loopback at 127.0.0.1 only, not ${address}`);
  return address;
}

/** slirp4netns's DNS forwarder, which asks the host's resolvers from the host (reachable even when they are on its loopback). */
export const SLIRP_DNS = '10.0.2.3';

/**
 * /etc/resolv.conf of the namespaces with a way out: the host's, its nameservers replaced by slirp4netns's forwarder. A host
 * nameserver on loopback (systemd-resolved's 127.0.0.53) would be the namespace's own loopback, where nothing answers.
 */
export function slirpResolvConf(hostText: string): string {
  const kept = hostText.split('\n').filter((l) => !/^\s*nameserver\s/.test(l) && l.trim() !== '');
  return [`nameserver ${SLIRP_DNS}`, ...kept].join('\n') + '\n';
}

/** /etc/hosts of a workspace's namespaces: its services' and datastores' internal hostnames. */
export function hostsFile(entries: Array<{ address: string; hostnames: string[] }>): string {
  const lines = ['127.0.0.1 localhost', '::1 localhost ip6-localhost ip6-loopback'];
  for (const e of entries) if (e.hostnames.length > 0) lines.push(`${e.address} ${e.hostnames.join(' ')}`);
  return lines.join('\n') + '\n';
}
