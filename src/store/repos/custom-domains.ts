import { and, asc, count, eq, gt, inArray, lte, ne, or } from 'drizzle-orm';
import type { Db } from '../db.js';
import { customDomains, services } from '../schema/index.js';

export type CustomDomainRow = typeof customDomains.$inferSelect;

/** Services' custom domains (core/domains). */
export function createCustomDomainRepo(db: Db) {
  return {
    /** The domain and its twin, together or not at all (a name the workspace holds fails the unique index). */
    async insertAll(rows: Array<typeof customDomains.$inferInsert>): Promise<CustomDomainRow[]> {
      return db.insert(customDomains).values(rows).returning();
    },
    async countOf(serviceId: string): Promise<number> {
      const [row] = await db.select({ n: count() }).from(customDomains).where(eq(customDomains.serviceId, serviceId));
      return row?.n ?? 0;
    },
    /** Whether a service of the workspace already holds one of `names`. */
    async takenIn(workspaceId: string, names: string[]): Promise<boolean> {
      const rows = await db
        .select({ id: customDomains.id })
        .from(customDomains)
        .where(and(eq(customDomains.workspaceId, workspaceId), inArray(customDomains.name, names)))
        .limit(1);
      return rows.length > 0;
    },
    /** The row that has `name` verified, when it is not `exceptId` (at most one: a partial unique index). */
    async verifiedElsewhere(name: string, exceptId: string): Promise<CustomDomainRow | undefined> {
      const [row] = await db
        .select()
        .from(customDomains)
        .where(
          and(
            eq(customDomains.name, name),
            eq(customDomains.verificationStatus, 'verified'),
            ne(customDomains.id, exceptId),
          ),
        )
        .limit(1);
      return row;
    },
    /** A service's domain by id or by name. */
    async find(serviceId: string, idOrName: string): Promise<CustomDomainRow | undefined> {
      const [row] = await db
        .select()
        .from(customDomains)
        .where(
          and(
            eq(customDomains.serviceId, serviceId),
            or(eq(customDomains.id, idOrName), eq(customDomains.name, idOrName.toLowerCase())),
          ),
        )
        .limit(1);
      return row;
    },
    list(serviceId: string, q: { afterId?: string; limit: number }): Promise<CustomDomainRow[]> {
      return db
        .select()
        .from(customDomains)
        .where(and(eq(customDomains.serviceId, serviceId), q.afterId ? gt(customDomains.id, q.afterId) : undefined))
        .orderBy(asc(customDomains.id))
        .limit(q.limit);
    },
    /** Deletes the domain and the twin that redirects to it. */
    async delete(domain: CustomDomainRow): Promise<CustomDomainRow[]> {
      return db
        .delete(customDomains)
        .where(
          and(
            eq(customDomains.serviceId, domain.serviceId),
            or(eq(customDomains.id, domain.id), eq(customDomains.redirectForName, domain.name)),
          ),
        )
        .returning();
    },
    async update(id: string, patch: Partial<typeof customDomains.$inferInsert>): Promise<CustomDomainRow | undefined> {
      const [row] = await db.update(customDomains).set(patch).where(eq(customDomains.id, id)).returning();
      return row;
    },
    /** Sets `patch` on the row only while it is still verified (a takeover; false when it no longer was). */
    async updateIfVerified(id: string, patch: Partial<typeof customDomains.$inferInsert>): Promise<boolean> {
      const rows = await db
        .update(customDomains)
        .set(patch)
        .where(and(eq(customDomains.id, id), eq(customDomains.verificationStatus, 'verified')))
        .returning({ id: customDomains.id });
      return rows.length > 0;
    },
    due(now: Date, limit: number): Promise<CustomDomainRow[]> {
      return db
        .select()
        .from(customDomains)
        .where(lte(customDomains.nextCheckAt, now))
        .orderBy(asc(customDomains.nextCheckAt))
        .limit(limit);
    },
    /** Every verified domain with its service's slug: what the router serves. */
    verified() {
      return db
        .select({ name: customDomains.name, redirectForName: customDomains.redirectForName, slug: services.slug })
        .from(customDomains)
        .innerJoin(services, eq(customDomains.serviceId, services.id))
        .where(eq(customDomains.verificationStatus, 'verified'));
    },
  };
}
export type CustomDomainRepo = ReturnType<typeof createCustomDomainRepo>;
