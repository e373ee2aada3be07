import { X509Certificate } from 'node:crypto';
import type { CertificateAuthority } from '../../integrations/acme.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { CertificateRepo, CertificateRow } from '../../store/repos/certificates.js';
import type { Events } from '../events.js';

/** How long one process holds an order before another may take it over (its process died mid-order). */
const CLAIM_MS = 5 * 60_000;
const MAX_RETRY_MS = 6 * 3_600_000;

/** A certificate the HTTPS listener serves. */
export interface ServedCertificate {
  name: string;
  certPem: string;
  keyPem: string;
}

/**
 * When to renew: `renewBeforeMs` (30 days) before expiry, or at two thirds of the lifetime when that comes later
 * (a short-lived certificate keeps a third of its life in hand).
 */
export function renewalTime(notBefore: Date, notAfter: Date, renewBeforeMs: number): Date {
  const lifetime = notAfter.getTime() - notBefore.getTime();
  return new Date(notAfter.getTime() - Math.min(renewBeforeMs, lifetime / 3));
}

/**
 * Certificates for verified custom domains, ordered from an ACME server with http-01. Each certificate is a row that
 * comes due (first order, renewal, retry with backoff); one process claims it and orders, the others wait.
 */
export function createCertificates(deps: {
  repo: CertificateRepo;
  box: SecretBox;
  ca: CertificateAuthority;
  events: Pick<Events, 'record' | 'poke'>;
  renewBeforeMs: number;
  retryBaseMs: number;
  log: Logger;
}) {
  const { repo, box, log } = deps;
  const answers = { put: repo.putChallenge, remove: repo.removeChallenge };

  async function record(
    row: CertificateRow,
    type: 'certificate_issued' | 'certificate_renewed' | 'certificate_failed',
    details: Record<string, unknown>,
  ) {
    const owner = await repo.ownerOf(row.domainId);
    if (!owner) return; // the domain went away meanwhile
    await deps.events.record({ ...owner, type, details: { domainId: row.domainId, name: row.name, ...details } });
    deps.events.poke();
  }

  /** Orders one claimed certificate; true when a new one is ready to serve. */
  async function order(row: CertificateRow): Promise<boolean> {
    try {
      const issued = await deps.ca.order(row.name, answers);
      const leaf = new X509Certificate(issued.certPem);
      const notBefore = new Date(leaf.validFrom);
      const notAfter = new Date(leaf.validTo);
      await repo.settle(row.domainId, {
        status: 'issued',
        certPem: issued.certPem,
        keySealed: box.seal(issued.keyPem),
        notBefore,
        notAfter,
        dueAt: renewalTime(notBefore, notAfter, deps.renewBeforeMs),
        failures: 0,
        lastError: null,
      });
      const type = row.status === 'issued' ? 'certificate_renewed' : 'certificate_issued';
      await record(row, type, { notAfter: notAfter.toISOString() });
      log.info({ domain: row.name, notAfter }, `certificate ${type === 'certificate_issued' ? 'issued' : 'renewed'}`);
      return true;
    } catch (err) {
      const failures = row.failures + 1;
      const wait = Math.min(MAX_RETRY_MS, deps.retryBaseMs * 2 ** Math.min(failures - 1, 12));
      const error = (err as Error).message.slice(0, 500);
      // A renewal that fails leaves the issued certificate in service until it expires.
      await repo.settle(row.domainId, { failures, lastError: error, dueAt: new Date(Date.now() + wait) });
      await record(row, 'certificate_failed', { error, retryInMs: wait });
      log.warn({ domain: row.name, err: error }, 'certificate order failed');
      return false;
    }
  }

  return {
    /** Orders what is due (new verified domains, renewals, retries), one at a time; true when one was issued. */
    async orderDue(limit = 10): Promise<boolean> {
      await repo.addMissing();
      let issued = false;
      for (let i = 0; i < limit; i++) {
        const now = new Date();
        const row = await repo.claimDue(now, new Date(now.getTime() + CLAIM_MS));
        if (!row) break;
        if (await order(row)) issued = true;
      }
      return issued;
    },
    /** The http-01 answer for `token`, whichever process placed it. */
    answer: (token: string) => repo.challenge(token),
    /** What changes whenever the served set does (names and update times): cheap to compare every pass. */
    async servedStamp(): Promise<string> {
      return (await repo.issuedStamps()).map((r) => `${r.name}@${r.updatedAt.getTime()}`).join(',');
    },
    /** Every certificate to serve, keys opened. */
    async served(): Promise<ServedCertificate[]> {
      const rows = await repo.issued();
      return rows.flatMap((r) =>
        r.certPem && r.keySealed ? [{ name: r.name, certPem: r.certPem, keyPem: box.open(r.keySealed) }] : [],
      );
    },
  };
}
export type Certificates = ReturnType<typeof createCertificates>;
