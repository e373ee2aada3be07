import ipaddr from 'ipaddr.js';

/**
 * ipaddr.js range names a webhook may not reach: loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7),
 * link-local (169.254/16 with cloud metadata, fe80::/10), CGNAT (100.64/10), multicast, unspecified, and the other
 * special-purpose blocks. Only `unicast` (public) is allowed.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  // ::ffff:127.0.0.1 is 127.0.0.1: judge the IPv4 address it carries.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === 'unicast';
}

/** A URL host that is a literal IP address (IPv6 without its brackets), else undefined. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : undefined;
}

/** An IPv4 range as its first and last address, unsigned 32-bit numbers. */
export interface IPv4Range {
  first: number;
  last: number;
}

/** An IPv4 CIDR (`10.1.0.0/16`) or address (a /32) as its range; undefined when it is neither. */
export function ipv4Range(text: string): IPv4Range | undefined {
  const [address, bits = '32', extra] = text.trim().split('/');
  if (extra !== undefined || !address || !ipaddr.IPv4.isValidFourPartDecimal(address) || !/^\d{1,2}$/.test(bits))
    return undefined;
  const prefix = Number(bits);
  if (prefix > 32) return undefined;
  const value = ipaddr.IPv4.parse(address)
    .toByteArray()
    .reduce((n, byte) => n * 256 + byte, 0);
  const size = 2 ** (32 - prefix);
  const first = value - (value % size);
  return { first, last: first + size - 1 };
}

export const formatIPv4 = (n: number) => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');

/** Sorted, with ranges that overlap or touch merged: what an nftables interval set takes. */
export function mergeRanges(ranges: IPv4Range[]): IPv4Range[] {
  const merged: IPv4Range[] = [];
  for (const r of [...ranges].sort((a, b) => a.first - b.first)) {
    const prev = merged[merged.length - 1];
    if (prev && r.first <= prev.last + 1) prev.last = Math.max(prev.last, r.last);
    else merged.push({ ...r });
  }
  return merged;
}

export const overlaps = (a: IPv4Range, b: IPv4Range) => a.first <= b.last && b.first <= a.last;
