import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { isPublicAddress } from '../lib/ip-ranges.js';

/** A lookup that answered only private or reserved addresses. */
export class Refused extends Error {}

/**
 * A `lookup` for node:net, tls and http that keeps only public addresses (unless `allowPrivate`): every address DNS
 * answers is checked, and the connection is made to a checked one, so a rebinding DNS server cannot answer "public"
 * to a check and "private" to the connect (there is only one lookup). A literal address skips lookup: callers check
 * `socket.remoteAddress` on connect as well. Webhook deliveries and log streams go through it.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const usable = allowPrivate ? addresses : addresses.filter((a) => isPublicAddress(a.address));
      if (usable.length === 0)
        return callback(new Refused(`${hostname} resolves only to private or reserved addresses`), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      callback(null, usable[0]!.address, usable[0]!.family);
    });
  };
}
