import type { DnsLookup } from '../../integrations/dns.js';
import { AppError, conflict, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { isUniqueViolation } from '../../store/db.js';
import type { CustomDomainRepo, CustomDomainRow } from '../../store/repos/custom-domains.js';
import type { CertificateRow } from '../../store/repos/certificates.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { Events } from '../events.js';
import { checkDomainName } from './names.js';
import { createOwnership, type Claimant, type Verdict } from './ownership.js';

const DAY_MS = 86_400_000;
const MAX_RETRY_MS = 3_600_000;

/** Where a domain must point: a CNAME to the service's own name (subdomains), or the router's IPs. */
export const dnsRecordsFor = (
  domain: Pick<CustomDomainRow, 'name' | 'domainType'>,
  target: string,
  routerIps: string[],
): Array<{ type: string; name: string; value: string }> => [
  ...(domain.domainType === 'subdomain' ? [{ type: 'CNAME', name: domain.name, value: target }] : []),
  ...routerIps.map((ip) => ({ type: ip.includes(':') ? 'AAAA' : 'A', name: domain.name, value: ip })),
];

/**
 * Custom domains (docs/routing.md, "Custom domains"): names unique per workspace, routable only once their DNS points at
 * Slipway and proves the workspace owns them (ownership.ts), in one workspace at most. Checked on demand (`verify`)
 * and in the background (`checkDue`): unverified ones with backoff, verified ones daily; a change is an event and
 * re-routes at once (`onRoutesChanged`).
 */
/** A custom domain's certificate as the API shows it: none until the domain is verified, then pending until issued. */
export interface CertificateView {
  status: 'none' | 'pending' | 'issued' | 'failed';
  expiresAt?: Date;
  /** The last order's error: why none was issued, or why the last renewal failed. */
  error?: string;
}

export function createDomains(deps: {
  repo: CustomDomainRepo;
  certificatesOf: (domainIds: string[]) => Promise<CertificateRow[]>;
  lookup: DnsLookup;
  appsDomain: string;
  routerIps: string[];
  /** The workspace's proof token's secret part (an HMAC under the secret key). */
  tagOf: (workspaceId: string) => string;
  /** Domains one service may hold (twins count): each costs DNS lookups in every background pass. */
  perService: number;
  /** The first wait before an unverified domain is checked again; it doubles up to an hour. */
  retryBaseMs: number;
  claimantOf: (serviceId: string) => Promise<Claimant | undefined>;
  events: Pick<Events, 'record' | 'poke'>;
  onRoutesChanged: () => Promise<void>;
  log: Logger;
  now?: () => Date;
}) {
  const now = deps.now ?? (() => new Date());
  const ownership = createOwnership(deps);
  const later = (at: Date, failedChecks: number) =>
    new Date(at.getTime() + Math.min(MAX_RETRY_MS, deps.retryBaseMs * 2 ** Math.min(failedChecks, 10)));

  async function changed(domain: CustomDomainRow, workspaceId: string, verified: boolean, reason?: string) {
    await deps.events.record({
      workspaceId,
      serviceId: domain.serviceId,
      type: verified ? 'custom_domain_verified' : 'custom_domain_unverified',
      details: { id: domain.id, name: domain.name, ...(reason ? { reason } : {}) },
    });
    deps.events.poke();
  }

  /** The holder whose proof is gone loses the name (an event for its workspace); false when it no longer held it. */
  async function unseat(from: CustomDomainRow, at: Date): Promise<boolean> {
    const reason = `${from.name}'s DNS no longer proves it belongs to this workspace, and it was verified elsewhere`;
    const patch = { verificationStatus: 'unverified', unverifiedReason: reason, failedChecks: 1 };
    if (!(await deps.repo.updateIfVerified(from.id, { ...patch, nextCheckAt: later(at, 0) }))) return false;
    await changed(from, from.workspaceId, false, reason);
    return true;
  }

  /** Marks the domain verified; false when another check verified the name at the same moment (it stays theirs). */
  async function seat(domain: CustomDomainRow, at: Date): Promise<boolean> {
    try {
      await deps.repo.update(domain.id, {
        verificationStatus: 'verified',
        unverifiedReason: null,
        failedChecks: 0,
        nextCheckAt: new Date(at.getTime() + DAY_MS),
        ...(domain.verificationStatus !== 'verified' ? { verifiedAt: at } : {}),
      });
      return true;
    } catch (err) {
      if (!isUniqueViolation(err)) throw err; // the partial unique index on verified names
      return false;
    }
  }

  /** Looks the domain up and records what it found; true when routes changed (its status, or a holder's). */
  async function check(domain: CustomDomainRow): Promise<boolean> {
    const owner = await deps.claimantOf(domain.serviceId);
    if (!owner) return false;
    const at = now();
    let verdict: Verdict;
    try {
      verdict = await ownership.judge(domain, owner);
    } catch (err) {
      // The resolver failed: nothing is known, so nothing changes; ask again later.
      deps.log.warn({ domain: domain.name, err: (err as Error).message }, 'custom domain lookup failed');
      await deps.repo.update(domain.id, { nextCheckAt: new Date(at.getTime() + deps.retryBaseMs) });
      return false;
    }
    const unseated = verdict.verified && verdict.from ? await unseat(verdict.from, at) : false;
    if (verdict.verified && !(await seat(domain, at)))
      verdict = { verified: false, reason: `another check verified ${domain.name} at the same moment` };
    if (!verdict.verified)
      await deps.repo.update(domain.id, {
        verificationStatus: 'unverified',
        unverifiedReason: verdict.reason,
        failedChecks: domain.failedChecks + 1,
        nextCheckAt: later(at, domain.failedChecks),
      });
    if (verdict.verified === (domain.verificationStatus === 'verified')) return unseated;
    await changed(domain, owner.workspaceId, verdict.verified, verdict.verified ? undefined : verdict.reason);
    return true;
  }

  async function find(service: ServiceRow, idOrName: string) {
    const domain = await deps.repo.find(service.id, idOrName);
    if (!domain) throw notFound('custom domain');
    return domain;
  }

  /** Adds the name (and its www./apex twin); both are checked at once by the background loop. */
  async function add(service: ServiceRow, input: string): Promise<CustomDomainRow[]> {
    const checked = checkDomainName(input, deps.appsDomain);
    const names = [checked.name, ...(checked.twin ? [checked.twin.name] : [])];
    if ((await deps.repo.countOf(service.id)) + names.length > deps.perService)
      throw conflict(`a service holds at most ${deps.perService} custom domains (twins included): delete one first`);
    // Only this workspace's names conflict: whether another workspace holds a name is not told (its DNS decides).
    const held = () => conflict(`${names.join(' or ')} is already a custom domain of a service in this workspace`);
    if (await deps.repo.takenIn(service.workspaceId, names)) throw held();
    const base = {
      serviceId: service.id,
      workspaceId: service.workspaceId,
      publicSuffix: checked.publicSuffix,
      nextCheckAt: now(),
    };
    const rows = [
      { ...base, id: newId('customDomain'), name: checked.name, domainType: checked.domainType },
      ...(checked.twin ? [{ ...base, id: newId('customDomain'), ...checked.twin, redirectForName: checked.name }] : []),
    ];
    return deps.repo.insertAll(rows).catch((err: unknown) => {
      throw isUniqueViolation(err) ? held() : err;
    });
  }

  return {
    add,
    /** A blueprint's `domains`: adds each name the service lacks; what cannot be added is a warning, not an error. */
    async ensure(service: ServiceRow, names: string[]): Promise<string[]> {
      const warnings: string[] = [];
      // A file may list any number of names; past the service's cap each would still cost lookups, to fail anyway.
      const considered = [...new Set(names)].slice(0, deps.perService);
      if (considered.length < new Set(names).size)
        warnings.push(`domains: only the first ${deps.perService} are considered (the per-service cap)`);
      for (const name of considered) {
        try {
          // Compared as stored (punycode, lowercase): a name the service holds is left alone.
          if (await deps.repo.find(service.id, checkDomainName(name, deps.appsDomain).name)) continue;
          await add(service, name);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          warnings.push(`domains: ${name}: ${err.message}`);
        }
      }
      return warnings;
    },
    list: (service: ServiceRow, q: { afterId?: string; limit: number }) => deps.repo.list(service.id, q),
    get: find,
    /** Checks the domain (and its twin) now; the result shows at once in GET. */
    async verify(service: ServiceRow, idOrName: string): Promise<void> {
      const domain = await find(service, idOrName);
      const twin = domain.redirectForName
        ? await deps.repo.find(service.id, domain.redirectForName)
        : (await deps.repo.list(service.id, { limit: 100 })).find((d) => d.redirectForName === domain.name);
      let changed = false;
      for (const d of [domain, ...(twin ? [twin] : [])]) changed = (await check(d)) || changed;
      if (changed) await deps.onRoutesChanged();
    },
    /** Deletes the domain (and its twin): it stops routing at once. */
    async remove(service: ServiceRow, idOrName: string): Promise<void> {
      await deps.repo.delete(await find(service, idOrName));
      await deps.onRoutesChanged();
    },
    /** One background pass: the domains whose check is due. */
    async checkDue(limit = 50): Promise<number> {
      let changed = false;
      const due = await deps.repo.due(now(), limit);
      for (const d of due) changed = (await check(d)) || changed;
      if (changed) await deps.onRoutesChanged();
      return due.length;
    },
    /** Where the user must point `domain` of `service` at their DNS host. */
    /** The certificate of each domain, by id, in one query. */
    async certificates(rows: CustomDomainRow[]): Promise<Map<string, CertificateView>> {
      const found = new Map((await deps.certificatesOf(rows.map((d) => d.id))).map((c) => [c.domainId, c]));
      return new Map(
        rows.map((d): [string, CertificateView] => {
          const c = found.get(d.id);
          if (d.verificationStatus !== 'verified') return [d.id, { status: 'none' }];
          if (!c || (c.status !== 'issued' && c.failures === 0)) return [d.id, { status: 'pending' }];
          const error = c.lastError ?? undefined;
          if (c.status === 'issued') return [d.id, { status: 'issued', expiresAt: c.notAfter ?? undefined, error }];
          return [d.id, { status: 'failed', error }];
        }),
      );
    },
    dnsRecords: (domain: CustomDomainRow, service: Pick<ServiceRow, 'slug'>) =>
      dnsRecordsFor(domain, ownership.targetOf(service.slug), deps.routerIps),
    /** The TXT record that proves the domain's workspace owns it. */
    verificationRecord: ownership.record,
  };
}
export type Domains = ReturnType<typeof createDomains>;
