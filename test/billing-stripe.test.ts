/**
 * Billing through Stripe, with the real `stripe` client against a faithful fake of Stripe's API: plans from products
 * and prices, one customer per workspace, checkout and portal URLs, signed webhooks (forged, stale and replayed ones
 * refused or ignored), subscription state in event order, 402 for new paid resources while it lapses, and audit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { startFakeStripe, type FakeStripe } from './helpers/fake-stripe.js';
import { bootServer, type TestServer } from './helpers/server.js';

let stripe: FakeStripe;
let server: TestServer;
let api: Client;
let owner: TestUser;
let starterPrice: string;
const urls = { successUrl: 'https://app.example.test/billing/done', cancelUrl: 'https://app.example.test/billing' };
const hook = () => `${server.url}/v1/billing/webhook`;
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  stripe = await startFakeStripe();
  starterPrice = stripe.addPlan('starter', 900).id;
  stripe.addPlan('basic_1gb', 2100, 'postgres');
  // A product without Slipway's metadata is someone else's: not a plan.
  stripe.products.push({ id: 'prod_other', object: 'product', active: true, name: 'T-shirt', metadata: {} });
  stripe.prices.push({
    id: 'price_other',
    object: 'price',
    active: true,
    currency: 'usd',
    unit_amount: 2500,
    product: 'prod_other',
    recurring: null,
  });
  server = await bootServer({
    SLIPWAY_STRIPE_SECRET_KEY: stripe.secretKey,
    SLIPWAY_STRIPE_API_URL: stripe.url,
    SLIPWAY_STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
    SLIPWAY_BILLING_BLOCK_LAPSED: '1',
  });
  api = client(server.url);
  owner = await signUp(api);
}, 60_000);
afterAll(async () => {
  await server?.close();
  await stripe?.close();
});

const subscription = (customer: string, status: string) => ({
  id: 'sub_test_1',
  object: 'subscription',
  customer,
  status,
  items: {
    object: 'list',
    data: [{ id: 'si_1', price: { id: starterPrice }, current_period_end: now() + 30 * 86400 }],
  },
});
const newService = (name: string, plan: string) =>
  api.post('/v1/services', { type: 'web_service', name, serviceDetails: { runtime: 'node', plan } }, owner);

describe('billing with Stripe', () => {
  it("lists Stripe's plans, and the estimate prices with them", async () => {
    expect((await api.get('/v1/billing/configured', owner)).body).toEqual({ configured: true });
    const plans = await api.get('/v1/billing/plans', owner);
    expect(plans.status).toBe(200);
    expect(plans.body).toEqual([
      {
        id: starterPrice,
        plan: 'starter',
        kind: 'service',
        name: 'Slipway starter',
        unitAmount: 900,
        currency: 'usd',
        interval: 'month',
      },
      expect.objectContaining({ plan: 'basic_1gb', kind: 'postgres', unitAmount: 2100 }),
    ]);
    const estimate = (await api.get(`/v1/workspaces/${owner.workspaceId}/cost-estimate`, owner)).body;
    expect(estimate.catalogVersion).toMatch(/\+stripe$/);
  });

  it('blocks a new paid resource with 402 until the subscription is active; a free one is fine', async () => {
    const blocked = await newService('paid-before', 'starter');
    expect(blocked.status).toBe(402);
    expect(blocked.body).toMatchObject({ code: 'payment_required', message: /does not exist.*keeps running/ });
    const free = await newService('free-one', 'free');
    expect(free.status).toBe(201);
    // A one-off job of the free service on a paid plan is a paid run too.
    const job = await api.post(
      `/v1/services/${free.body.service.id}/jobs`,
      { startCommand: 'true', planId: 'plan-srv-006' },
      owner,
    );
    expect(job.status).toBe(402);
    const pg = await api.post('/v1/postgres', { name: 'paid-db', plan: 'basic_1gb' }, owner);
    expect(pg.status).toBe(402);
  });

  it('starts a checkout with one customer per workspace; only admins may', async () => {
    const developer = await addMember(api, owner, 'developer');
    const asDeveloper = { ownerId: owner.workspaceId, plan: 'starter', ...urls };
    expect((await api.post('/v1/billing/checkout', asDeveloper, developer)).status).toBe(403);
    expect((await api.get(`/v1/workspaces/${owner.workspaceId}/billing`, developer)).status).toBe(403);
    expect((await api.get(`/v1/workspaces/${owner.workspaceId}/cost-estimate`, developer)).status).toBe(200);
    const [a, b] = await Promise.all([
      api.post('/v1/billing/checkout', { plan: 'starter', ...urls }, owner),
      api.post('/v1/billing/checkout', { plan: starterPrice, ...urls }, owner),
    ]);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(a.body.url).toMatch(/^https:\/\/checkout\.stripe\.test\//);
    expect(a.body.customerId).toBe(b.body.customerId);
    const customers = [...stripe.customers.values()].filter(
      (c) => c.metadata.slipway_workspace_id === owner.workspaceId,
    );
    expect(customers).toHaveLength(1);
    expect(stripe.checkoutSessions.at(-1)).toMatchObject({ customer: a.body.customerId, mode: 'subscription' });
    expect((await api.post('/v1/billing/checkout', { plan: 'gold', ...urls }, owner)).status).toBe(404);
    expect(
      (await api.post('/v1/billing/checkout', { plan: 'starter', successUrl: 'javascript:x', cancelUrl: 'x' }, owner))
        .status,
    ).toBe(400);
    const portal = await api.post('/v1/billing/portal', { returnUrl: urls.cancelUrl }, owner);
    expect(portal.status).toBe(201);
    expect(portal.body.url).toMatch(/^https:\/\/billing\.stripe\.test\//);
  });

  it('keeps the subscription as Stripe says, in event order; forged, stale and replayed events change nothing', async () => {
    const customer = (await api.get(`/v1/workspaces/${owner.workspaceId}/billing`, owner)).body.customerId;
    expect(customer).toMatch(/^cus_/);
    const t = now();
    const active = await stripe.sendEvent(hook(), 'customer.subscription.created', subscription(customer, 'active'), {
      created: t,
    });
    expect(active).toMatchObject({ status: 200, body: { received: true, duplicate: false } });
    const state = (await api.get(`/v1/workspaces/${owner.workspaceId}/billing`, owner)).body;
    expect(state).toMatchObject({
      subscription: { id: 'sub_test_1', status: 'active', priceId: starterPrice },
      paidResourcesBlocked: false,
    });
    const paid = await newService('paid-after', 'starter');
    expect(paid.status).toBe(201);

    // An older event arriving late does not undo a newer one.
    const late = await stripe.sendEvent(hook(), 'customer.subscription.updated', subscription(customer, 'incomplete'), {
      created: t - 60,
    });
    expect(late.status).toBe(200);
    // Forged (another secret), stale (signed 10 minutes ago), and a replay of the first event.
    const forged = await stripe.sendEvent(hook(), 'customer.subscription.deleted', subscription(customer, 'canceled'), {
      secret: 'whsec_forged',
    });
    expect(forged.status).toBe(400);
    expect(forged.body).toMatchObject({ code: 'bad_request', message: /Stripe-Signature/ });
    const stale = await stripe.sendEvent(hook(), 'customer.subscription.deleted', subscription(customer, 'canceled'), {
      signedAt: now() - 600,
      created: t + 5,
    });
    expect(stale.status).toBe(400);
    const replay = await stripe.sendEvent(hook(), 'customer.subscription.deleted', subscription(customer, 'canceled'), {
      id: active.event.id,
      created: t + 5,
    });
    expect(replay).toMatchObject({ status: 200, body: { duplicate: true } });
    expect((await api.get(`/v1/workspaces/${owner.workspaceId}/billing`, owner)).body.subscription.status).toBe(
      'active',
    );
    const unsigned = await fetch(hook(), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"id":"evt_x","type":"x"}',
    });
    expect(unsigned.status).toBe(400);

    // Cancelled: new paid resources are blocked again; the running one stays.
    const deleted = await stripe.sendEvent(
      hook(),
      'customer.subscription.deleted',
      subscription(customer, 'canceled'),
      { created: t + 10 },
    );
    expect(deleted.status).toBe(200);
    expect((await api.get(`/v1/workspaces/${owner.workspaceId}/billing`, owner)).body).toMatchObject({
      subscription: { status: 'canceled' },
      paidResourcesBlocked: true,
    });
    expect((await newService('paid-lapsed', 'starter')).status).toBe(402);
    const kept = await api.get(`/v1/services/${paid.body.service?.id ?? paid.body.id}`, owner);
    expect(kept.status).toBe(200);
    expect(kept.body.suspended).toBe('not_suspended');
    // A move to a paid plan is a new paid resource too.
    const free = (await api.get('/v1/services?name=free-one', owner)).body[0].service;
    const patched = await api.patch(`/v1/services/${free.id}`, { serviceDetails: { plan: 'standard' } }, owner);
    expect(patched.status).toBe(402);
  });

  it("audits billing changes, Stripe's as the system", async () => {
    const entries = (await api.get(`/v1/audit-logs?ownerId=${owner.workspaceId}&limit=100`, owner)).body.map(
      (e: any) => e.auditLog,
    );
    const events = entries.map((e: any) => e.event);
    expect(events).toEqual(
      expect.arrayContaining(['StartBillingCheckoutEvent', 'OpenBillingPortalEvent', 'StripeWebhookEvent']),
    );
    const fromStripe = entries.find((e: any) => e.event === 'StripeWebhookEvent' && e.status === 'success');
    expect(fromStripe.actor).toMatchObject({ type: 'system', id: 'stripe' });
  });
});

describe('billing without Stripe: the 501 matrix', () => {
  let plain: TestServer;
  let papi: Client;
  let user: TestUser;
  beforeAll(async () => {
    plain = await bootServer();
    papi = client(plain.url);
    user = await signUp(papi);
  }, 60_000);
  afterAll(() => plain?.close());

  it('answers 501 for Stripe routes, never for the estimate or /configured', async () => {
    expect((await papi.get('/v1/billing/configured', user)).body).toEqual({ configured: false });
    expect((await papi.get(`/v1/workspaces/${user.workspaceId}/cost-estimate`, user)).status).toBe(200);
    expect((await papi.get(`/v1/workspaces/${user.workspaceId}/billing`, user)).body).toMatchObject({
      configured: false,
      paidResourcesBlocked: false,
    });
    for (const [method, path, body] of [
      ['get', '/v1/billing/plans', undefined],
      ['post', '/v1/billing/checkout', { plan: 'starter', ...urls }],
      ['post', '/v1/billing/portal', { returnUrl: urls.cancelUrl }],
    ] as const) {
      const res = method === 'get' ? await papi.get(path, user) : await papi.post(path, body, user);
      expect(res.status, path).toBe(501);
      expect(res.body).toMatchObject({ code: 'not_configured', message: /SLIPWAY_STRIPE_SECRET_KEY/ });
    }
    const webhook = await fetch(`${plain.url}/v1/billing/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=x' },
      body: '{"id":"evt_1","type":"customer.subscription.created"}',
    });
    expect(webhook.status).toBe(501);
    // Without Stripe nothing is blocked.
    const created = await papi.post(
      '/v1/services',
      { type: 'web_service', name: 'paid', serviceDetails: { runtime: 'node' } },
      user,
    );
    expect(created.status).toBe(201);
  });
});
