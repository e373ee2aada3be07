import Stripe from 'stripe';

/** A Stripe price that sells one of Slipway's plans (its product's metadata names the plan). */
export interface StripePlan {
  priceId: string;
  productId: string;
  /** Slipway's plan name: the product's `slipway_plan` metadata. */
  plan: string;
  /** What the plan is for: the product's `slipway_kind` metadata (service, postgres, key_value); default service. */
  kind: string;
  name: string;
  /** Minor units of `currency`. */
  unitAmount: number;
  currency: string;
  interval: string | null;
}

/** A verified Stripe event: its id, type, creation time and the object it is about. */
export interface StripeEvent {
  id: string;
  type: string;
  created: number;
  object: Record<string, unknown>;
}

/** The billing port: core sees only this, never the `stripe` package. */
export interface BillingProvider {
  plans(): Promise<StripePlan[]>;
  /** One customer per workspace, even when two requests race (Stripe's idempotency key). */
  createCustomer(input: { workspaceId: string; name: string }): Promise<string>;
  checkout(input: {
    workspaceId: string;
    customerId: string;
    priceIds: string[];
    successUrl: string;
    cancelUrl: string;
  }): Promise<{ id: string; url: string }>;
  portal(input: { customerId: string; returnUrl: string }): Promise<{ url: string }>;
  /** Checks `Stripe-Signature` over the raw body (timestamp within the tolerance); throws when it does not hold. */
  verify(rawBody: string, signature: string): StripeEvent;
  meterEvent(input: {
    eventName: string;
    customerId: string;
    value: number;
    identifier: string;
    timestamp: number;
  }): Promise<void>;
}

export interface StripeOptions {
  secretKey: string;
  /** Another endpoint than api.stripe.com (tests, a proxy). */
  apiUrl?: string;
  webhookSecret?: string;
  /** Seconds a signed event stays acceptable: Stripe's own default, 300. */
  toleranceSeconds?: number;
}

/** The official `stripe` client behind the billing port. */
export function createStripeProvider(options: StripeOptions): BillingProvider {
  const endpoint = options.apiUrl ? new URL(options.apiUrl) : undefined;
  const stripe = new Stripe(options.secretKey, {
    maxNetworkRetries: 2,
    timeout: 15_000,
    telemetry: false,
    ...(endpoint
      ? {
          host: endpoint.hostname,
          port: endpoint.port || (endpoint.protocol === 'http:' ? 80 : 443),
          protocol: endpoint.protocol === 'http:' ? 'http' : 'https',
        }
      : {}),
  });
  return {
    async plans() {
      const plans: StripePlan[] = [];
      for await (const price of stripe.prices.list({ active: true, limit: 100, expand: ['data.product'] })) {
        const product = price.product as Stripe.Product;
        const plan = typeof product === 'object' ? product.metadata?.slipway_plan : undefined;
        if (!plan || !product.active || price.unit_amount === null) continue;
        plans.push({
          priceId: price.id,
          productId: product.id,
          plan,
          kind: product.metadata.slipway_kind || 'service',
          name: product.name,
          unitAmount: price.unit_amount,
          currency: price.currency,
          interval: price.recurring?.interval ?? null,
        });
      }
      return plans;
    },
    async createCustomer({ workspaceId, name }) {
      const customer = await stripe.customers.create(
        { name, metadata: { slipway_workspace_id: workspaceId } },
        { idempotencyKey: `slipway-customer-${workspaceId}` },
      );
      return customer.id;
    },
    async checkout({ workspaceId, customerId, priceIds, successUrl, cancelUrl }) {
      const session = await stripe.checkout.sessions.create({
        mode: 'subscription',
        customer: customerId,
        client_reference_id: workspaceId,
        line_items: priceIds.map((price, i) => (i === 0 ? { price, quantity: 1 } : { price })),
        subscription_data: { metadata: { slipway_workspace_id: workspaceId } },
        success_url: successUrl,
        cancel_url: cancelUrl,
      });
      return { id: session.id, url: session.url! };
    },
    async portal({ customerId, returnUrl }) {
      const session = await stripe.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl });
      return { url: session.url };
    },
    verify(rawBody, signature) {
      const event = stripe.webhooks.constructEvent(
        rawBody,
        signature,
        options.webhookSecret!,
        options.toleranceSeconds ?? 300,
      );
      return {
        id: event.id,
        type: event.type,
        created: event.created,
        object: event.data.object as unknown as Record<string, unknown>,
      };
    },
    async meterEvent({ eventName, customerId, value, identifier, timestamp }) {
      await stripe.billing.meterEvents.create(
        {
          event_name: eventName,
          payload: { stripe_customer_id: customerId, value: String(value) },
          identifier,
          timestamp,
        },
        { idempotencyKey: identifier },
      );
    },
  };
}
