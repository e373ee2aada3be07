import type { StripePlan } from '../../integrations/stripe.js';
import { AppError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { UsageReports } from '../../observability/usage/report.js';
import type { BillingRepo } from '../../store/repos/billing.js';
import type { PriceCatalog } from './catalog.js';
import { estimateCost, type CostEstimate } from './estimate.js';
import type { Subscriptions } from './subscriptions.js';

/** The billing period: the UTC calendar month of `at`. */
export const periodOf = (at: Date) => ({
  start: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)),
  end: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)),
});

export type PaidKind = 'service' | 'postgres' | 'key_value';
const TABLE = { service: 'services', postgres: 'postgres', key_value: 'keyValue' } as const;

/** The catalog with Stripe's monthly prices in place of its own, for the plans Stripe sells (Stripe takes precedence). */
export function withStripePrices(catalog: PriceCatalog, plans: StripePlan[]): PriceCatalog {
  const monthly = plans.filter((p) => p.interval === 'month' && p.currency === catalog.currency && p.kind in TABLE);
  if (!monthly.length) return catalog;
  const next = { ...catalog, services: { ...catalog.services }, postgres: { ...catalog.postgres } };
  next.keyValue = { ...catalog.keyValue };
  for (const p of monthly) next[TABLE[p.kind as PaidKind]][p.plan] = p.unitAmount;
  return { ...next, version: `${catalog.version}+stripe` };
}

const notConfigured = () =>
  new AppError(
    'not_configured',
    'billing is not configured: set SLIPWAY_STRIPE_SECRET_KEY (docs/billing.md, "Billing (Stripe)")',
  );

/** Cost estimates from the usage ledger and the price catalog, and Stripe billing when it is configured. */
export function createBilling(deps: {
  usage: UsageReports;
  /** The workspace's resources as configured now: what the projection prices. */
  repo: Pick<BillingRepo, 'pricedResources'>;
  catalog: PriceCatalog;
  /** Absent without SLIPWAY_STRIPE_SECRET_KEY. */
  subscriptions?: Subscriptions;
  /** SLIPWAY_BILLING_BLOCK_LAPSED. */
  blockLapsed: boolean;
  log: Logger;
}) {
  const { subscriptions: subs } = deps;
  /** The catalog in force: Stripe's prices over the file's, or the file's alone when Stripe cannot be reached. */
  async function catalog(): Promise<PriceCatalog> {
    if (!subs) return deps.catalog;
    try {
      return withStripePrices(deps.catalog, await subs.plans());
    } catch (err) {
      deps.log.warn({ err }, "Stripe's prices could not be read; the estimate uses the price catalog");
      return deps.catalog;
    }
  }
  const stripe = () => {
    if (!subs) throw notConfigured();
    return subs;
  };

  /**
   * The cost of `period` up to `now` (a closed period: now = end), from exactly what GET /v1/usage reports for it, and
   * projected to its end from the resources running now.
   */
  async function costOf(workspaceId: string, period: { start: Date; end: Date }, now = period.end) {
    const [report, running, prices] = await Promise.all([
      deps.usage.report({ workspaceIds: [workspaceId], start: period.start, end: now }),
      now < period.end ? deps.repo.pricedResources(workspaceId) : undefined,
      catalog(),
    ]);
    return estimateCost(report, workspaceId, prices, { start: period.start, now, end: period.end }, running);
  }

  return {
    configured: () => !!subs,
    costOf,
    /** The current period's cost so far and projected. */
    estimate: (workspaceId: string, now = new Date()): Promise<CostEstimate> => costOf(workspaceId, periodOf(now), now),
    plans: () => stripe().plans(),
    checkout: (workspaceId: string, input: { plan: string; successUrl: string; cancelUrl: string }) =>
      stripe().checkout(workspaceId, input),
    portal: (workspaceId: string, returnUrl: string) => stripe().portal(workspaceId, returnUrl),
    handleWebhook: (rawBody: string, signature: string | undefined) => stripe().handleWebhook(rawBody, signature),
    /** What a workspace's admins see of its billing. */
    async account(workspaceId: string) {
      const account = subs ? await subs.account(workspaceId) : undefined;
      return {
        configured: !!subs,
        customerId: account?.customerId ?? null,
        subscription: account?.subscriptionId
          ? {
              id: account.subscriptionId,
              status: account.subscriptionStatus,
              priceId: account.priceId,
              currentPeriodEnd: account.currentPeriodEnd?.toISOString() ?? null,
            }
          : null,
        paidResourcesBlocked: !!subs && deps.blockLapsed && !subs.inGoodStanding(account),
      };
    },
    /**
     * With SLIPWAY_BILLING_BLOCK_LAPSED, a new paid resource (or a move to a paid plan) needs a subscription in good
     * standing: 402 otherwise. Running resources are never stopped for it.
     */
    async assertMayAddPaid(workspaceId: string, kind: PaidKind, plan: string): Promise<void> {
      if (!subs || !deps.blockLapsed) return;
      const price = (await catalog())[TABLE[kind]][plan] ?? 0;
      if (price === 0) return;
      const account = await subs.account(workspaceId);
      if (subs.inGoodStanding(account)) return;
      const state = account?.subscriptionStatus ? `is ${account.subscriptionStatus}` : 'does not exist';
      throw new AppError(
        'payment_required',
        `this workspace's subscription ${state}: the paid plan "${plan}" can be used again once it is active (POST /v1/billing/checkout or /v1/billing/portal); what runs now keeps running`,
      );
    },
  };
}
export type Billing = ReturnType<typeof createBilling>;
