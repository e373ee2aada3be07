import type { BillingProvider, StripeEvent, StripePlan } from '../../integrations/stripe.js';
import { AppError, badRequest, notFound } from '../../lib/errors.js';
import type { BillingAccountRow, BillingRepo } from '../../store/repos/billing.js';
import type { Transact } from '../../store/repos/index.js';

/** Stripe statuses under which a workspace may add paid resources. */
const IN_GOOD_STANDING = new Set(['active', 'trialing']);
const PLANS_TTL_MS = 60_000;

export interface WebhookOutcome {
  /** Stripe's id of the verified event. */
  eventId: string;
  /** The event was seen before (a replay or a redelivery): nothing changed. */
  duplicate: boolean;
  /** The workspace whose subscription the event was about, when Slipway knows the customer. */
  workspaceId?: string;
  subscriptionStatus?: string | null;
}

const str = (v: unknown) =>
  typeof v === 'string' ? v : typeof v === 'object' && v ? (v as { id?: string }).id : undefined;

/** A Stripe failure as an API error: what Stripe refused is the caller's 400, the rest is a 503 to retry. */
async function viaStripe<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const e = err as { type?: string; message?: string };
    const message = (e.message ?? String(err)).split('\n')[0];
    if (e.type === 'StripeInvalidRequestError') throw badRequest(`Stripe refused the request: ${message}`);
    throw new AppError('unavailable', `Stripe could not be reached or failed: ${message}`);
  }
}

/** The subscription fields of a Stripe subscription object (current_period_end moved to its items in newer API versions). */
function subscriptionState(event: StripeEvent) {
  const o = event.object;
  const item = ((o.items as { data?: Array<Record<string, unknown>> } | undefined)?.data ?? [])[0];
  const periodEnd = (o.current_period_end ?? item?.current_period_end) as number | undefined;
  return {
    subscriptionId: str(o.id) ?? null,
    subscriptionStatus: event.type === 'customer.subscription.deleted' ? 'canceled' : (str(o.status) ?? null),
    priceId: str((item?.price as Record<string, unknown> | undefined)?.id) ?? null,
    currentPeriodEnd: periodEnd ? new Date(periodEnd * 1000) : null,
    stateAt: new Date(event.created * 1000),
  };
}

/**
 * Stripe customers, checkout, the portal and the subscription state Stripe's webhooks report (docs/billing.md, "Billing (Stripe)").
 * Stripe is the source of truth; Slipway keeps the last state it was told, in event order.
 */
export function createSubscriptions(deps: {
  provider: BillingProvider;
  repo: Pick<BillingRepo, 'account' | 'link'>;
  transact: Transact;
  workspaceName: (workspaceId: string) => Promise<string>;
  meteredPrice?: string;
  webhookConfigured: boolean;
}) {
  const { provider, repo } = deps;
  let cached: { at: number; plans: Promise<StripePlan[]> } | undefined;
  const plans = () => {
    if (!cached || Date.now() - cached.at > PLANS_TTL_MS) {
      const fetched = viaStripe(() => provider.plans());
      cached = { at: Date.now(), plans: fetched };
      fetched.catch(() => (cached = undefined)); // a failed fetch is not kept
    }
    return cached.plans;
  };

  async function customerOf(workspaceId: string): Promise<BillingAccountRow> {
    const linked = await repo.account(workspaceId);
    if (linked) return linked;
    const name = await deps.workspaceName(workspaceId);
    const customerId = await viaStripe(() => provider.createCustomer({ workspaceId, name }));
    return repo.link(workspaceId, customerId);
  }

  return {
    plans,
    account: (workspaceId: string) => repo.account(workspaceId),
    inGoodStanding: (account: BillingAccountRow | undefined) =>
      !!account?.subscriptionStatus && IN_GOOD_STANDING.has(account.subscriptionStatus),

    async checkout(workspaceId: string, input: { plan: string; successUrl: string; cancelUrl: string }) {
      const price = (await plans()).find((p) => p.plan === input.plan || p.priceId === input.plan);
      if (!price) throw notFound(`plan ${JSON.stringify(input.plan)} (GET /v1/billing/plans lists them)`);
      const account = await customerOf(workspaceId);
      const priceIds = [price.priceId, ...(deps.meteredPrice ? [deps.meteredPrice] : [])];
      const customerId = account.customerId;
      const session = await viaStripe(() => provider.checkout({ workspaceId, customerId, priceIds, ...input }));
      return { ...session, customerId: account.customerId, plan: price.plan };
    },

    async portal(workspaceId: string, returnUrl: string) {
      const account = await repo.account(workspaceId);
      if (!account) throw new AppError('conflict', 'this workspace has no Stripe customer yet: start a checkout first');
      return viaStripe(() => provider.portal({ customerId: account.customerId, returnUrl }));
    },

    /** A verified event is handled once: its id and the state it carries commit together, or neither does. */
    async handleWebhook(rawBody: string, signature: string | undefined): Promise<WebhookOutcome> {
      if (!deps.webhookConfigured)
        throw new AppError('not_configured', 'Stripe webhooks are not configured: set SLIPWAY_STRIPE_WEBHOOK_SECRET');
      if (!signature) throw badRequest('the Stripe-Signature header is missing');
      let event: StripeEvent;
      try {
        event = provider.verify(rawBody, signature);
      } catch (err) {
        throw badRequest(`the Stripe-Signature does not verify: ${(err as Error).message.split('\n')[0]}`);
      }
      const outcome = await deps.transact(async (tx): Promise<Omit<WebhookOutcome, 'eventId'>> => {
        if (!(await tx.billing.firstSighting(event.id, event.type))) return { duplicate: true };
        const o = event.object;
        const customerId = str(o.customer);
        const account = customerId ? await tx.billing.accountByCustomer(customerId) : undefined;
        if (!account) return { duplicate: false }; // not one of ours: acknowledged, so Stripe stops sending it
        if (event.type.startsWith('customer.subscription.')) {
          const row = await tx.billing.setSubscription(account.customerId, subscriptionState(event));
          return {
            duplicate: false,
            workspaceId: account.workspaceId,
            subscriptionStatus: (row ?? account).subscriptionStatus,
          };
        }
        // checkout.session.completed and the rest: the customer.subscription.* events that follow carry the state.
        return { duplicate: false, workspaceId: account.workspaceId, subscriptionStatus: account.subscriptionStatus };
      });
      return { eventId: event.id, ...outcome };
    },
  };
}
export type Subscriptions = ReturnType<typeof createSubscriptions>;
