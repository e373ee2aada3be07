import type { DnsAnswer, DnsLookup } from '../../integrations/dns.js';
import type { CustomDomainRepo, CustomDomainRow } from '../../store/repos/custom-domains.js';

/** Where a workspace's proof of ownership goes: a TXT record at `_slipway-challenge.<name>`. */
export const challengeName = (name: string) => `_slipway-challenge.${name}`;

/** A service that claims a name: its slug (a CNAME target) and its workspace (whose token a TXT record holds). */
export interface Claimant {
  slug: string;
  workspaceId: string;
}

/** What a check concluded: verified (taking the name over from `from`, which lost its proof), or why not. */
export type Verdict = { verified: true; from?: CustomDomainRow } | { verified: false; reason: string };

/**
 * Who may serve a name (docs/routing.md, "Custom domains"; docs/architecture.md, "Custom domains"). A name must point at
 * Slipway, and its DNS must prove the claiming workspace owns it: a CNAME chain that reaches the claiming service's
 * own `<slug>.<apps domain>`, or a TXT record `_slipway-challenge.<name>` holding the workspace's token. Addresses at
 * the router alone prove nothing: the router is shared, so anyone's name may point at it. A name verified elsewhere
 * stays there while its DNS still proves it for that workspace; otherwise the new proof takes it over.
 */
/** What a lookup found, in words, for a reason: the CNAME chain and the addresses, or that there was nothing. */
function found(answer: DnsAnswer): string {
  const records = [
    ...answer.cnames.map((c) => `CNAME ${c}`),
    ...answer.addresses.map((a) => `${a.includes(':') ? 'AAAA' : 'A'} ${a}`),
  ];
  return records.length
    ? `found ${records.join(', ')}`
    : 'no A, AAAA or CNAME record was found: the name does not exist (NXDOMAIN) or has none yet';
}

export function createOwnership(deps: {
  lookup: DnsLookup;
  repo: Pick<CustomDomainRepo, 'verifiedElsewhere'>;
  appsDomain: string;
  routerIps: string[];
  /** The workspace's unguessable tag (an HMAC under the secret key), stable across processes and restarts. */
  tagOf: (workspaceId: string) => string;
  claimantOf: (serviceId: string) => Promise<Claimant | undefined>;
}) {
  const targetOf = (slug: string) => `${slug}.${deps.appsDomain.toLowerCase()}`;
  const tokenOf = (workspaceId: string) => `slipway-verify=${deps.tagOf(workspaceId)}`;
  const routerRecords = deps.routerIps.length ? `A/AAAA records to ${deps.routerIps.join(', ')}` : undefined;

  /** What to create, in words: a CNAME alone (subdomains), or the router's addresses with the TXT record. */
  function howTo(domain: CustomDomainRow, target: string): string {
    const txt = `the TXT record ${challengeName(domain.name)} (verificationRecord)`;
    const viaRouter = routerRecords ? `${routerRecords} and ${txt}` : undefined;
    const cname = domain.domainType === 'subdomain' ? `a CNAME to ${target}` : undefined;
    return [cname, viaRouter].filter(Boolean).join(', or ') || 'SLIPWAY_ROUTER_PUBLIC_IPS is not set';
  }

  return {
    targetOf,
    /** The TXT record that proves `domain`'s workspace owns it. */
    record: (domain: Pick<CustomDomainRow, 'name' | 'workspaceId'>) => ({
      type: 'TXT',
      name: challengeName(domain.name),
      value: tokenOf(domain.workspaceId),
    }),
    /** Looks `domain` up for `claimant`; a resolver failure throws (nothing is known). */
    async judge(domain: CustomDomainRow, claimant: Claimant): Promise<Verdict> {
      const target = targetOf(claimant.slug);
      const answer = await deps.lookup.points(domain.name);
      let txt: Promise<string[]> | undefined;
      const txtValues = () => (txt ??= deps.lookup.txt(challengeName(domain.name)));
      const proves = async (c: Claimant) =>
        answer.cnames.includes(targetOf(c.slug)) || (await txtValues()).includes(tokenOf(c.workspaceId));

      const viaCname = answer.cnames.includes(target);
      const atRouter = answer.addresses.length > 0 && answer.addresses.every((a) => deps.routerIps.includes(a));
      if (!viaCname && !atRouter)
        return {
          verified: false,
          reason: `${domain.name} does not point here (${found(answer)}): create ${howTo(domain, target)}`,
        };
      if (!(await proves(claimant))) {
        const values = await txtValues();
        const txtFound = values.length
          ? `${values.length} TXT record${values.length > 1 ? 's' : ''} at ${challengeName(domain.name)}, none of them this workspace's value`
          : `no TXT record at ${challengeName(domain.name)}`;
        const pointsFound = `${found(answer)}; ${txtFound}`;
        return {
          verified: false,
          reason:
            `${domain.name} points at this Slipway's router, but its DNS does not prove it is this workspace's ` +
            `(${pointsFound}): create ${howTo(domain, target)}`,
        };
      }
      const holder = await deps.repo.verifiedElsewhere(domain.name, domain.id);
      const holderClaimant = holder && (await deps.claimantOf(holder.serviceId));
      if (holder && holderClaimant && (await proves(holderClaimant)))
        return {
          verified: false,
          reason:
            `${domain.name}'s DNS also proves it for another workspace on this Slipway, which keeps it until that ` +
            `proof (its TXT value, or its CNAME) is removed`,
        };
      return holder ? { verified: true, from: holder } : { verified: true };
    },
  };
}
export type Ownership = ReturnType<typeof createOwnership>;
