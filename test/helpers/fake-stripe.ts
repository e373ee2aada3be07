/**
 * A faithful fake of the part of Stripe's API Slipway uses, behind the real `stripe` client: form-encoded requests with
 * bracketed keys, Bearer auth, Stripe's error shape, list pagination and `expand`, Idempotency-Key replay, and meter
 * events counted once per identifier. Stripe is third-party SaaS; this is the only thing faked.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

type Obj = Record<string, any>;

/** `a[b][0][c]=1` → {a: {b: [{c: '1'}]}}, as Stripe reads its form bodies. */
export function parseForm(text: string): Obj {
  const out: Obj = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const path = key.replace(/\]/g, '').split('[');
    let at: any = out;
    path.forEach((part, i) => {
      const last = i === path.length - 1;
      const nextIsIndex = !last && /^\d*$/.test(path[i + 1]!);
      const slot = part === '' ? at.length : part;
      if (last) at[slot] = value;
      else at = at[slot] ??= nextIsIndex ? [] : {};
    });
  }
  return out;
}

const id = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1000);

export interface EventOptions {
  id?: string;
  /** The event's `created` (seconds). */
  created?: number;
  /** Sign with another secret (a forged event). */
  secret?: string;
  /** The signature's timestamp (seconds): an old one is a replayed capture. */
  signedAt?: number;
}

export interface FakeStripe {
  url: string;
  secretKey: string;
  webhookSecret: string;
  products: Obj[];
  prices: Obj[];
  customers: Map<string, Obj>;
  checkoutSessions: Obj[];
  portalSessions: Obj[];
  /** Every meter event request, duplicates included. */
  meterRequests: Obj[];
  /** Meter events as Stripe counts them: one per identifier. */
  meterEvents: Map<string, Obj>;
  /** Delay (ms) before a meter event is answered: lets a test kill Slipway mid-report. */
  meterDelayMs: number;
  /** Adds a product with `slipway_plan` metadata and a monthly price; returns the price. */
  addPlan(plan: string, unitAmount: number, kind?: string): Obj;
  /** A signed Stripe event POSTed to `url`, as Stripe sends it. */
  sendEvent(
    url: string,
    type: string,
    object: Obj,
    opts?: EventOptions,
  ): Promise<{ status: number; body: any; event: Obj }>;
  close(): Promise<void>;
}

export async function startFakeStripe(): Promise<FakeStripe> {
  const secretKey = `sk_test_${randomBytes(12).toString('hex')}`;
  const webhookSecret = `whsec_${randomBytes(16).toString('hex')}`;
  const replays = new Map<string, { status: number; body: string }>();
  const fake = {
    secretKey,
    webhookSecret,
    products: [] as Obj[],
    prices: [] as Obj[],
    customers: new Map<string, Obj>(),
    checkoutSessions: [] as Obj[],
    portalSessions: [] as Obj[],
    meterRequests: [] as Obj[],
    meterEvents: new Map<string, Obj>(),
    meterDelayMs: 0,
  };
  const error = (status: number, message: string, param?: string) => ({
    status,
    body: { error: { type: status === 401 ? 'invalid_request_error' : 'invalid_request_error', message, param } },
  });
  const list = (all: Obj[], q: Obj, url: string) => {
    const limit = Math.min(100, Number(q.limit ?? 10));
    const from = q.starting_after ? all.findIndex((x) => x.id === q.starting_after) + 1 : 0;
    const data = all.slice(from, from + limit);
    return { object: 'list', url, has_more: from + limit < all.length, data };
  };

  function handle(method: string, path: string, q: Obj): { status: number; body: unknown } {
    if (method === 'GET' && path === '/v1/products') return { status: 200, body: list(fake.products, q, path) };
    if (method === 'GET' && path === '/v1/prices') {
      const expand = ([] as string[]).concat(q.expand ?? []);
      const active = fake.prices.filter((p) => q.active === undefined || String(p.active) === q.active);
      const page = list(active, q, path);
      if (expand.includes('data.product'))
        page.data = page.data.map((p) => ({ ...p, product: fake.products.find((x) => x.id === p.product) }));
      return { status: 200, body: page };
    }
    if (method === 'POST' && path === '/v1/customers') {
      const customer = {
        id: id('cus'),
        object: 'customer',
        created: now(),
        name: q.name ?? null,
        metadata: q.metadata ?? {},
      };
      fake.customers.set(customer.id, customer);
      return { status: 200, body: customer };
    }
    if (method === 'POST' && path === '/v1/checkout/sessions') {
      if (!fake.customers.has(q.customer)) return error(400, `No such customer: '${q.customer}'`, 'customer');
      if (q.mode !== 'subscription') return error(400, 'mode must be subscription here', 'mode');
      for (const [i, item] of (q.line_items ?? []).entries())
        if (!fake.prices.some((p) => p.id === item.price))
          return error(400, `No such price: '${item.price}'`, `line_items[${i}][price]`);
      if (!q.success_url) return error(400, 'Missing required param: success_url.', 'success_url');
      const session = {
        id: id('cs_test'),
        object: 'checkout.session',
        mode: q.mode,
        customer: q.customer,
        client_reference_id: q.client_reference_id ?? null,
        line_items: q.line_items,
        success_url: q.success_url,
        cancel_url: q.cancel_url ?? null,
        url: `https://checkout.stripe.test/c/pay/${id('cs_test')}`,
        metadata: {},
      };
      fake.checkoutSessions.push(session);
      return { status: 200, body: session };
    }
    if (method === 'POST' && path === '/v1/billing_portal/sessions') {
      if (!fake.customers.has(q.customer)) return error(400, `No such customer: '${q.customer}'`, 'customer');
      const session = {
        id: id('bps'),
        object: 'billing_portal.session',
        customer: q.customer,
        return_url: q.return_url,
        url: `https://billing.stripe.test/p/session/${id('test')}`,
      };
      fake.portalSessions.push(session);
      return { status: 200, body: session };
    }
    if (method === 'POST' && path === '/v1/billing/meter_events') {
      fake.meterRequests.push(q);
      if (!q.event_name) return error(400, 'Missing required param: event_name.', 'event_name');
      if (!fake.customers.has(q.payload?.stripe_customer_id))
        return error(400, 'No customer for payload[stripe_customer_id]', 'payload');
      if (!/^\d+(\.\d+)?$/.test(q.payload?.value ?? ''))
        return error(400, 'payload[value] must be a number', 'payload');
      const ts = Number(q.timestamp ?? now());
      if (ts < now() - 35 * 86400 || ts > now() + 300) return error(400, 'timestamp is out of range', 'timestamp');
      const event = {
        object: 'billing.meter_event',
        created: now(),
        event_name: q.event_name,
        identifier: q.identifier ?? id('mev'),
        payload: q.payload,
        timestamp: ts,
      };
      // Stripe drops a repeated identifier (asynchronously): the request succeeds, the usage is counted once.
      if (!fake.meterEvents.has(event.identifier)) fake.meterEvents.set(event.identifier, event);
      return { status: 200, body: event };
    }
    return error(404, `Unrecognized request URL (${method}: ${path})`);
  }

  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => void answer(req, res, text));
  });
  async function answer(req: http.IncomingMessage, res: http.ServerResponse, text: string) {
    const url = new URL(req.url!, 'http://stripe.test');
    const send = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
      res.end(body);
    };
    if (req.headers.authorization !== `Bearer ${secretKey}`) {
      const e = error(401, 'Invalid API Key provided');
      return send(e.status, JSON.stringify(e.body));
    }
    const key = req.headers['idempotency-key'];
    const replayKey = typeof key === 'string' ? `${req.method} ${url.pathname} ${key}` : undefined;
    if (replayKey && replays.has(replayKey)) {
      const r = replays.get(replayKey)!;
      res.setHeader('idempotent-replayed', 'true');
      return send(r.status, r.body);
    }
    const q = req.method === 'GET' ? parseForm(url.search.slice(1)) : parseForm(text);
    if (url.pathname === '/v1/billing/meter_events' && fake.meterDelayMs)
      await new Promise((r) => setTimeout(r, fake.meterDelayMs));
    const { status, body } = handle(req.method!, url.pathname, q);
    const out = JSON.stringify(body);
    if (replayKey && status < 500) replays.set(replayKey, { status, body: out });
    send(status, out);
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const signer = new Stripe(secretKey);

  return Object.assign(fake, {
    url: base,
    addPlan(plan: string, unitAmount: number, kind = 'service') {
      const product = {
        id: id('prod'),
        object: 'product',
        active: true,
        name: `Slipway ${plan}`,
        metadata: { slipway_plan: plan, slipway_kind: kind },
      };
      const price = {
        id: id('price'),
        object: 'price',
        active: true,
        currency: 'usd',
        unit_amount: unitAmount,
        product: product.id,
        recurring: { interval: 'month', interval_count: 1 },
        type: 'recurring',
      };
      fake.products.push(product);
      fake.prices.push(price);
      return price;
    },
    async sendEvent(target: string, type: string, object: Obj, opts: EventOptions = {}) {
      const event = {
        id: opts.id ?? id('evt'),
        object: 'event',
        api_version: '2025-01-01',
        created: opts.created ?? now(),
        type,
        data: { object },
        livemode: false,
        pending_webhooks: 1,
      };
      const payload = JSON.stringify(event);
      const header = signer.webhooks.generateTestHeaderString({
        payload,
        secret: opts.secret ?? webhookSecret,
        ...(opts.signedAt ? { timestamp: opts.signedAt } : {}),
      });
      const res = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': header },
        body: payload,
      });
      return { status: res.status, body: await res.json().catch(() => null), event };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
