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
