import { Resolver } from 'node:dns/promises';

/** What a domain's DNS says about where it points. */
export interface DnsAnswer {
  /** The CNAME chain from the name, in order (empty when it has none). */
  cnames: string[];
  /** Its A and AAAA addresses (after the chain). */
  addresses: string[];
}

/** The DNS questions custom domains ask (core/domains). */
export interface DnsLookup {
  /** Where `name` points: its CNAME chain and addresses. */
  points(name: string): Promise<DnsAnswer>;
  /** The TXT records at `name`, each one string (its chunks joined). */
  txt(name: string): Promise<string[]>;
}

const MAX_CHAIN = 8;
const notFound = (err: unknown) => ['ENODATA', 'ENOTFOUND', 'NXDOMAIN'].includes((err as { code?: string }).code ?? '');

/**
 * Looks names up through `servers` (`host:port`, as SLIPWAY_DNS_SERVERS lists them; none: the system's resolvers).
 * A name with no such record is an empty answer; a resolver that fails (timeout, SERVFAIL) throws.
 */
export function createDnsLookup(servers: string[], timeoutMs = 3000): DnsLookup {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length) resolver.setServers(servers);
  const records = async <T>(query: () => Promise<T[]>): Promise<T[]> => {
    try {
      return await query();
    } catch (err) {
      if (notFound(err)) return [];
      throw err;
    }
  };
  return {
    async points(name) {
      const cnames: string[] = [];
      let at = name;
      for (let hop = 0; hop < MAX_CHAIN; hop++) {
        const [next] = await records(() => resolver.resolveCname(at));
        if (!next) break;
        at = next.toLowerCase().replace(/\.$/, '');
        cnames.push(at);
      }
      const v4 = await records(() => resolver.resolve4(at));
      const v6 = await records(() => resolver.resolve6(at));
      return { cnames, addresses: [...v4, ...v6] };
    },
    async txt(name) {
      return (await records(() => resolver.resolveTxt(name))).map((chunks) => chunks.join(''));
    },
  };
}
