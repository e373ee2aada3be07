import { and, asc, eq, gt, isNull, lte, notExists, or, sql } from 'drizzle-orm';
import type { Db } from '../db.js';
import type { ServiceType } from '../../model/enums.js';
import { billingAccounts, billingMeterReports, billingStripeEvents, datastores, services } from '../schema/index.js';

export type BillingAccountRow = typeof billingAccounts.$inferSelect;
export type MeterReportRow = typeof billingMeterReports.$inferSelect;
export type SubscriptionState = Pick<
  BillingAccountRow,
  'subscriptionId' | 'subscriptionStatus' | 'priceId' | 'currentPeriodEnd' | 'stateAt'
>;

/** A workspace's services and datastores as configured now, with what prices them (core/billing/estimate.ts decides what runs). */
export interface PricedResources {
  services: Array<{
    id: string;
    name: string;
    type: ServiceType;
    plan: string;
    numInstances: number;
    suspended: boolean;
  }>;
  datastores: Array<{ id: string; name: string; kind: 'postgres' | 'keyValue'; plan: string; suspended: boolean }>;
}

export function createBillingRepo(db: Db) {
  return {
    /** Plans as the meter reads them: a service without one is on starter, with one instance unless it says more. */
    async pricedResources(workspaceId: string): Promise<PricedResources> {
      const [s, d] = await Promise.all([
        db
          .select({
            id: services.id,
            name: services.name,
            type: services.type,
            plan: sql<string>`coalesce(${services.details}->>'plan', 'starter')`,
            numInstances: sql<number>`coalesce((${services.details}->>'numInstances')::int, 1)`,
            suspended: sql<boolean>`jsonb_array_length(${services.suspenders}) > 0`,
          })
          .from(services)
          .where(eq(services.workspaceId, workspaceId)),
        db
          .select({
            id: datastores.id,
            name: datastores.name,
            kind: datastores.kind,
            plan: datastores.plan,
            suspended: datastores.suspended,
          })
          .from(datastores)
          .where(eq(datastores.workspaceId, workspaceId)),
      ]);
      // PGlite and node-postgres may hand the int back as a string.
      return { services: s.map((r) => ({ ...r, numInstances: Number(r.numInstances) })), datastores: d };
    },
    async account(workspaceId: string): Promise<BillingAccountRow | undefined> {
      const [row] = await db.select().from(billingAccounts).where(eq(billingAccounts.workspaceId, workspaceId));
      return row;
    },
    async accountByCustomer(customerId: string): Promise<BillingAccountRow | undefined> {
      const [row] = await db.select().from(billingAccounts).where(eq(billingAccounts.customerId, customerId));
      return row;
    },
    /** Links a customer to a workspace unless one is linked already; the linked row either way. */
    async link(workspaceId: string, customerId: string): Promise<BillingAccountRow> {
      await db.insert(billingAccounts).values({ workspaceId, customerId }).onConflictDoNothing();
      const [row] = await db.select().from(billingAccounts).where(eq(billingAccounts.workspaceId, workspaceId));
      return row!;
    },
    /** Sets the subscription fields unless a newer Stripe event set them already (`stateAt`). */
    async setSubscription(customerId: string, state: SubscriptionState): Promise<BillingAccountRow | undefined> {
      const [row] = await db
        .update(billingAccounts)
        .set({ ...state, updatedAt: new Date() })
        .where(
          and(
            eq(billingAccounts.customerId, customerId),
            or(isNull(billingAccounts.stateAt), lte(billingAccounts.stateAt, state.stateAt!)),
          ),
        )
        .returning();
      return row;
    },
    /** Records a Stripe event id; false when it was recorded before (a replay or a redelivery). */
    async firstSighting(id: string, type: string): Promise<boolean> {
      const rows = await db.insert(billingStripeEvents).values({ id, type }).onConflictDoNothing().returning();
      return rows.length === 1;
    },
    /** Workspaces with a customer and no report yet for the period that starts at `periodStart`. */
    async unreported(periodStart: Date): Promise<BillingAccountRow[]> {
      return db
        .select()
        .from(billingAccounts)
        .where(
          notExists(
            db
              .select({ one: sql`1` })
              .from(billingMeterReports)
              .where(
                and(
                  eq(billingMeterReports.workspaceId, billingAccounts.workspaceId),
                  eq(billingMeterReports.periodStart, periodStart),
                ),
              ),
          ),
        );
    },
    /** A period's rows, all at once (one statement): a crash leaves all of them or none. */
    async addReports(rows: Array<typeof billingMeterReports.$inferInsert>): Promise<void> {
      if (rows.length) await db.insert(billingMeterReports).values(rows).onConflictDoNothing();
    },
    /** Pending reports in identifier order, after `after` (a keyset page). */
    pending(limit: number, after = ''): Promise<MeterReportRow[]> {
      return db
        .select()
        .from(billingMeterReports)
        .where(and(eq(billingMeterReports.status, 'pending'), gt(billingMeterReports.identifier, after)))
        .orderBy(asc(billingMeterReports.identifier))
        .limit(limit);
    },
    async markSent(identifier: string): Promise<void> {
      await db
        .update(billingMeterReports)
        .set({ status: 'sent', reportedAt: new Date() })
        .where(eq(billingMeterReports.identifier, identifier));
    },
    reportsOf(workspaceId: string): Promise<MeterReportRow[]> {
      return db
        .select()
        .from(billingMeterReports)
        .where(eq(billingMeterReports.workspaceId, workspaceId))
        .orderBy(asc(billingMeterReports.periodStart), asc(billingMeterReports.resourceKey));
    },
  };
}
export type BillingRepo = ReturnType<typeof createBillingRepo>;
