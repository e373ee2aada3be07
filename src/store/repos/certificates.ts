import { and, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { Db } from '../db.js';
import { acmeAccounts, acmeChallenges, certificates, customDomains, services } from '../schema/index.js';

export type CertificateRow = typeof certificates.$inferSelect;

/** Custom domains' certificates, the ACME account key and http-01 answers in flight (core/domains/certificates.ts). */
export function createCertificateRepo(db: Db) {
  /** A certificate in service: issued, for a domain that is still verified. */
  const served = and(eq(certificates.status, 'issued'), eq(customDomains.verificationStatus, 'verified'));
  const toDomain = eq(customDomains.id, certificates.domainId);
  return {
    /** The certificate rows of these domains (those that have one). */
    async ofDomains(domainIds: string[]): Promise<CertificateRow[]> {
      if (domainIds.length === 0) return [];
      return db.select().from(certificates).where(inArray(certificates.domainId, domainIds));
    },
    /** Verified domains with no certificate row yet get one, due now (one statement, so processes may race it). */
    async addMissing(): Promise<void> {
      await db.execute(sql`
        INSERT INTO ${certificates} (domain_id, name)
        SELECT ${customDomains.id}, ${customDomains.name} FROM ${customDomains}
        WHERE ${customDomains.verificationStatus} = 'verified'
        ON CONFLICT (domain_id) DO NOTHING`);
    },
    /**
     * Claims a due certificate of a verified domain for this process until `until` (compare-and-set on the claim): the
     * one process that gets the row orders it; a claim left by a crashed process lapses.
     */
    async claimDue(now: Date, until: Date): Promise<CertificateRow | undefined> {
      const verified = db
        .select({ id: customDomains.id })
        .from(customDomains)
        .where(eq(customDomains.verificationStatus, 'verified'));
      const [due] = await db
        .select({ id: certificates.domainId })
        .from(certificates)
        .where(
          and(
            lte(certificates.dueAt, now),
            or(isNull(certificates.claimedUntil), lt(certificates.claimedUntil, now)),
            sql`${certificates.domainId} IN ${verified}`,
          ),
        )
        .orderBy(certificates.dueAt)
        .limit(1);
      if (!due) return undefined;
      const [row] = await db
        .update(certificates)
        .set({ claimedUntil: until })
        .where(
          and(
            eq(certificates.domainId, due.id),
            or(isNull(certificates.claimedUntil), lt(certificates.claimedUntil, now)),
          ),
        )
        .returning();
      return row;
    },
    /** Ends this process's claim with the outcome of its order. */
    async settle(domainId: string, patch: Partial<typeof certificates.$inferInsert>): Promise<void> {
      await db
        .update(certificates)
        .set({ ...patch, claimedUntil: null, updatedAt: new Date() })
        .where(eq(certificates.domainId, domainId));
    },
    /** What the HTTPS listener serves: every issued certificate of a domain that is still verified. */
    issued() {
      return db
        .select({ name: certificates.name, certPem: certificates.certPem, keySealed: certificates.keySealed })
        .from(certificates)
        .innerJoin(customDomains, toDomain)
        .where(served);
    },
    /** The same rows' names and update times, in a stable order: whether the served set changed. */
    issuedStamps() {
      return db
        .select({ name: certificates.name, updatedAt: certificates.updatedAt })
        .from(certificates)
        .innerJoin(customDomains, toDomain)
        .where(served)
        .orderBy(certificates.name);
    },
    /** The service and workspace a domain's certificate belongs to (its events are theirs). */
    async ownerOf(domainId: string): Promise<{ serviceId: string; workspaceId: string } | undefined> {
      const [row] = await db
        .select({ serviceId: services.id, workspaceId: services.workspaceId })
        .from(customDomains)
        .innerJoin(services, eq(services.id, customDomains.serviceId))
        .where(eq(customDomains.id, domainId));
      return row;
    },

    async putChallenge(token: string, keyAuthorization: string): Promise<void> {
      await db
        .insert(acmeChallenges)
        .values({ token, keyAuthorization })
        .onConflictDoUpdate({ target: acmeChallenges.token, set: { keyAuthorization } });
    },
    async challenge(token: string): Promise<string | undefined> {
      const [row] = await db.select().from(acmeChallenges).where(eq(acmeChallenges.token, token));
      return row?.keyAuthorization;
    },
    async removeChallenge(token: string): Promise<void> {
      await db.delete(acmeChallenges).where(eq(acmeChallenges.token, token));
    },

    async accountKey(directoryUrl: string): Promise<string | undefined> {
      const [row] = await db.select().from(acmeAccounts).where(eq(acmeAccounts.directoryUrl, directoryUrl));
      return row?.keySealed;
    },
    /** Stores a new account key unless another process stored one first; answers the one that is kept. */
    async keepAccountKey(directoryUrl: string, keySealed: string): Promise<string> {
      await db.insert(acmeAccounts).values({ directoryUrl, keySealed }).onConflictDoNothing();
      return (await this.accountKey(directoryUrl))!;
    },
  };
}
export type CertificateRepo = ReturnType<typeof createCertificateRepo>;
