import { Type } from '@sinclair/typebox';
import type { StripePlan } from '../../integrations/stripe.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { BillingAccountBody, CostEstimateBody, PlanBody, ReturnUrl } from '../schemas/billing.js';
import { IdParam } from '../schemas/common.js';

const TAGS = ['Billing'];
const OwnerId = Type.Optional(
  Type.String({ maxLength: 64, description: 'Workspace (tea-…); default: your default workspace' }),
);
const planBody = (p: StripePlan) => ({
  id: p.priceId,
  plan: p.plan,
  kind: p.kind,
  name: p.name,
  unitAmount: p.unitAmount,
  currency: p.currency,
  interval: p.interval,
});

/** The cost estimate (always), and Stripe billing: plans, checkout, portal, Stripe's webhook (501 without Stripe). */
export function billingRoutes({ billing, guard }: HttpDeps) {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/workspaces/:ownerId/cost-estimate',
      summary: "The current month's cost so far and projected, per resource and line item (with or without billing)",
      tags: TAGS,
      access: 'viewer',
      schema: { params: Type.Object({ ownerId: IdParam }), response: { 200: CostEstimateBody } },
      handler: async (req) => billing.estimate((await guard.context(req, req.params.ownerId)).workspaceId),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/workspaces/:ownerId/billing',
      summary: "The workspace's Stripe customer and subscription, and whether new paid resources are blocked",
      tags: TAGS,
      access: 'admin',
      schema: { params: Type.Object({ ownerId: IdParam }), response: { 200: BillingAccountBody } },
      handler: async (req) => billing.account((await guard.context(req, req.params.ownerId)).workspaceId),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/billing/configured',
      summary: 'Whether this Slipway bills through Stripe',
      tags: TAGS,
      access: 'signed-in',
      schema: { response: { 200: Type.Object({ configured: Type.Boolean() }) } },
      handler: async () => ({ configured: billing.configured() }),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/billing/plans',
      summary: 'The plans Stripe sells, from its products and prices (501 not_configured without Stripe)',
      tags: TAGS,
      access: 'signed-in',
      schema: { response: { 200: Type.Array(PlanBody) } },
      handler: async () => (await billing.plans()).map(planBody),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/billing/checkout',
      summary: "Start a subscription checkout for a plan; answers Stripe's checkout URL",
      tags: TAGS,
      access: 'admin',
      audit: 'StartBillingCheckoutEvent',
      schema: {
        body: Type.Object({
          ownerId: OwnerId,
          plan: Type.String({ minLength: 1, maxLength: 200, description: "A plan name or Stripe's price id" }),
          successUrl: ReturnUrl,
          cancelUrl: ReturnUrl,
        }),
        response: {
          201: Type.Object({ id: Type.String(), url: Type.String(), customerId: Type.String(), plan: Type.String() }),
        },
      },
      handler: async (req, reply) => {
        const { workspaceId } = await guard.context(req, req.body.ownerId);
        req.auditInfo.workspaceId = workspaceId;
        const { plan, successUrl, cancelUrl } = req.body;
        return reply.code(201).send(await billing.checkout(workspaceId, { plan, successUrl, cancelUrl }));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/billing/portal',
      summary: "Open Stripe's customer portal for the workspace; answers its URL",
      tags: TAGS,
      access: 'admin',
      audit: 'OpenBillingPortalEvent',
      schema: {
        body: Type.Object({ ownerId: OwnerId, returnUrl: ReturnUrl }),
        response: { 201: Type.Object({ url: Type.String() }) },
      },
      handler: async (req, reply) => {
        const { workspaceId } = await guard.context(req, req.body.ownerId);
        req.auditInfo.workspaceId = workspaceId;
        return reply.code(201).send(await billing.portal(workspaceId, req.body.returnUrl));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/billing/webhook',
      summary: "Stripe's events (Stripe-Signature verified, each event id handled once)",
      tags: TAGS,
      access: 'public',
      audit: 'StripeWebhookEvent',
      rawBody: true,
      bodyLimit: 1024 * 1024,
      schema: {
        // Stripe's event, read by Stripe's library once its signature holds (the JSON parser leaves signed bodies).
        body: Type.Object({}),
        response: { 200: Type.Object({ received: Type.Boolean(), duplicate: Type.Boolean() }) },
      },
      handler: async (req) => {
        req.auditInfo.system = 'stripe';
        req.auditInfo.workspaceId = null;
        const signature = req.headers['stripe-signature'];
        const outcome = await billing.handleWebhook(
          req.rawBody ?? '',
          typeof signature === 'string' ? signature : undefined,
        );
        req.auditInfo.target = outcome.eventId;
        if (outcome.workspaceId) req.auditInfo.workspaceId = outcome.workspaceId;
        return { received: true, duplicate: outcome.duplicate };
      },
    }),
  ];
}
