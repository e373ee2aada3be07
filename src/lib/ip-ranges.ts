import ipaddr from 'ipaddr.js';

/**
 * Whether a webhook may reach `address` (docs/webhooks.md, "Webhooks"). IPv4: only ipaddr.js's `unicast` (public), so not
 * loopback, private (10/8, 172.16/12, 192.168/16), link-local (169.254/16, cloud metadata), CGNAT (100.64/10),
 * multicast, unspecified or the other special-purpose blocks. IPv6: an address that carries an IPv4 address is judged
 * by it (v4-mapped `::ffff:0:0/96`, NAT64's well-known `64:ff9b::/96`, 6to4 `2002::/16`); otherwise only IANA's global
 * unicast block `2000::/3` minus its special ranges (Teredo, documentation, benchmarking, ORCHID…). So `::/8`, where
 * the deprecated IPv4-compatible `::a.b.c.d` lives and which ipaddr.js calls `unicast`, is refused, as are ULAs
 * (fc00::/7), link-local (fe80::/10), multicast and NAT64's local-use `64:ff9b:1::/48`.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  const carried = carriedIPv4(v6);
  if (carried) return carried.range() === 'unicast';
  return (v6.parts[0]! & 0xe000) === 0x2000 && v6.range() === 'unicast';
}

/** The IPv4 address an IPv6 address stands for, where it carries one in a known place. */
function carriedIPv4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const [, b, , , , , g, h] = v6.parts as [number, number, number, number, number, number, number, number];
  const v4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  switch (v6.range()) {
    case 'ipv4Mapped':
      return v4(g, h);
    case 'rfc6052': // 64:ff9b::/96 ends with the IPv4 address; 64:ff9b:1::/48 (local use) falls through, refused
      return b === 0xff9b && v6.parts.slice(2, 6).every((part) => part === 0) ? v4(g, h) : undefined;
    case '6to4':
      return v4(b, v6.parts[2]!);
    default:
      return undefined;
  }
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
