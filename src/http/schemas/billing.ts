import { Type } from '@sinclair/typebox';

const LineItem = Type.Object({
  item: Type.Union([
    Type.Literal('instance_hours'),
    Type.Literal('datastore_hours'),
    Type.Literal('build_minutes'),
    Type.Literal('bandwidth'),
  ]),
  plan: Type.Optional(Type.String()),
  quantity: Type.Number({ description: 'As GET /v1/usage reports it for the same period' }),
  unit: Type.Union([Type.Literal('hours'), Type.Literal('minutes'), Type.Literal('GB')]),
  billableQuantity: Type.Optional(Type.Number({ description: 'Beyond what is included each month' })),
  amount: Type.Integer({ description: 'Minor units of currency (cents)' }),
  unitPrice: Type.Integer({ description: 'Minor units: per 30-day month, per 1,000 build minutes, or per GB' }),
});

export const CostEstimateBody = Type.Object(
  {
    ownerId: Type.String(),
    currency: Type.String(),
    catalogVersion: Type.String(),
    startTime: Type.String({ format: 'date-time', description: 'The period: its start…' }),
    endTime: Type.String({ format: 'date-time', description: '…up to now' }),
    periodEnd: Type.String({ format: 'date-time' }),
    costSoFar: Type.Integer({ description: 'Minor units, metered from startTime to endTime' }),
    projectedCost: Type.Integer({
      description:
        "Minor units by periodEnd: costSoFar plus what the resources running now cost from endTime to periodEnd at their plans' prices (`projection`)",
    }),
    resources: Type.Array(
      Type.Object({
        resourceId: Type.String(),
        type: Type.String(),
        name: Type.Optional(Type.String()),
        amount: Type.Integer(),
        lineItems: Type.Array(LineItem),
      }),
    ),
    lineItems: Type.Array(LineItem),
    projection: Type.Array(
      Type.Object({
        resourceId: Type.String(),
        type: Type.Union([Type.Literal('service'), Type.Literal('postgres'), Type.Literal('key_value')]),
        name: Type.String(),
        plan: Type.String(),
        instances: Type.Integer({ description: "The service's numInstances; 1 for a datastore" }),
        unitPrice: Type.Integer({ description: 'Minor units per instance per 30-day month' }),
        amount: Type.Integer({ description: 'Minor units from endTime to periodEnd, prorated by the millisecond' }),
      }),
      {
        description:
          'Each resource running now (services that are not suspended, but not cron jobs or static sites; datastores that are not suspended) and what it adds to projectedCost',
      },
    ),
  },
  { title: 'costEstimate' },
);

export const PlanBody = Type.Object(
  {
    id: Type.String({ description: "Stripe's price id" }),
    plan: Type.String({ description: "Slipway's plan name (the product's slipway_plan metadata)" }),
    kind: Type.String({ description: 'service, postgres or key_value (slipway_kind metadata)' }),
    name: Type.String(),
    unitAmount: Type.Integer({ description: 'Minor units of currency' }),
    currency: Type.String(),
    interval: Type.Union([Type.String(), Type.Null()]),
  },
  { title: 'billingPlan' },
);

export const BillingAccountBody = Type.Object(
  {
    configured: Type.Boolean(),
    customerId: Type.Union([Type.String(), Type.Null()]),
    subscription: Type.Union([
      Type.Object({
        id: Type.String(),
        status: Type.Union([Type.String(), Type.Null()]),
        priceId: Type.Union([Type.String(), Type.Null()]),
        currentPeriodEnd: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      }),
      Type.Null(),
    ]),
    paidResourcesBlocked: Type.Boolean({ description: 'New paid resources answer 402 (SLIPWAY_BILLING_BLOCK_LAPSED)' }),
  },
  { title: 'billingAccount' },
);

/** Where Stripe sends the customer back to: an http(s) URL. */
export const ReturnUrl = Type.String({ format: 'uri', maxLength: 2048, pattern: '^https?://' });
