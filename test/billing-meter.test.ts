/**
 * Metered usage reported to Stripe once per closed period and resource, across a kill -9 in the middle of reporting:
 * every resource's amount reaches Stripe's meter exactly once (resends carry the same identifier), and the amounts are
 * the cost of last month's ledger.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG } from '../src/core/billing/catalog.js';
import { client, signUp } from './helpers/client.js';
import { startFakeStripe, type FakeStripe } from './helpers/fake-stripe.js';
import { freshStore, spawnSlipway, waitFor, within, type SlipwayProcess } from './helpers/process.js';
import { bootServer } from './helpers/server.js';

const HOUR = 3600;
const cents = (seconds: number, monthly: number) => Math.round((seconds * monthly) / (30 * 86400));

describe('usage reported to Stripe', () => {
  let store: Awaited<ReturnType<typeof freshStore>>;
  let stripe: FakeStripe;
  const running: SlipwayProcess[] = [];
  afterAll(async () => {
    for (const proc of running) await proc.kill();
    await store?.remove();
    await stripe?.close();
  });
  const stripeEnv = () => ({
    SLIPWAY_STRIPE_SECRET_KEY: stripe.secretKey,
    SLIPWAY_STRIPE_API_URL: stripe.url,
    SLIPWAY_STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
  });

  it('sends each resource of last month once, even when Slipway is killed mid-report', async () => {
    store = await freshStore();
    stripe = await startFakeStripe();
    stripe.addPlan('starter', 700);
    const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));
    const lastMonth = (hoursIn: number) =>
      new Date(Date.UTC(monthStart.getUTCFullYear(), monthStart.getUTCMonth() - 1, 2) + hoursIn * HOUR * 1000);

    // Seed: a customer (through checkout), and last month's ledger; the meter's pass at start finds no customer yet.
    const seed = await bootServer({ ...stripeEnv(), SLIPWAY_BILLING_METER_INTERVAL_SECONDS: '3600' }, store);
    const api = client(seed.url);
    // A workspace whose Stripe customer is gone (deleted in Stripe's dashboard): its reports are refused. Made first,
    // so its reports sort first: they must not hold back the next workspace's.
    const gone = await signUp(api);
    const goneCheckout = await api.post(
      '/v1/billing/checkout',
      { plan: 'starter', successUrl: 'https://x.test/ok', cancelUrl: 'https://x.test/no' },
      gone,
    );
    await seed.slipway.store.executeSql(
      `insert into usage_entries (workspace_id, resource_id, source_id, kind, plan, quantity, started_at, ended_at)
       values ($1, 'srv-gone', 'src-gone', 'instance_seconds', 'pro', 36000, $2, $3)`,
      [gone.workspaceId, lastMonth(0), lastMonth(10)],
    );
    stripe.customers.delete(goneCheckout.body.customerId);
    const owner = await signUp(api);
    const checkout = await api.post(
      '/v1/billing/checkout',
      { plan: 'starter', successUrl: 'https://x.test/ok', cancelUrl: 'https://x.test/no' },
      owner,
    );
    expect(checkout.status).toBe(201);
    const seconds: Array<[string, string, string, number]> = [
      ['srv-meter-a', 'instance_seconds', 'starter', 100 * HOUR],
      ['srv-meter-a', 'instance_seconds', 'standard', 50 * HOUR],
      ['srv-meter-b', 'instance_seconds', 'pro', 20 * HOUR],
      ['dpg-meter', 'datastore_seconds', 'basic_1gb', 200 * HOUR],
      ['red-meter', 'datastore_seconds', 'starter', 300 * HOUR],
      ['srv-meter-a', 'build_seconds', 'starter', 700 * 60],
      ['srv-meter-b', 'bandwidth_bytes', 'starter', 130e9],
    ];
    for (const [i, [resource, kind, plan, quantity]] of seconds.entries())
      await seed.slipway.store.executeSql(
        `insert into usage_entries (workspace_id, resource_id, source_id, kind, plan, quantity, started_at, ended_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [owner.workspaceId, resource, `src-${i}`, kind, plan, quantity, lastMonth(i), lastMonth(i + 1)],
      );
    // This month's usage is not reported until the month is over.
    await seed.slipway.store.executeSql(
      `insert into usage_entries (workspace_id, resource_id, source_id, kind, plan, quantity, started_at, ended_at)
       values ($1, 'srv-this-month', 'src-now', 'instance_seconds', 'pro', 3600, $2, $3)`,
      [owner.workspaceId, new Date(Date.now() - 2 * HOUR * 1000), new Date(Date.now() - HOUR * 1000)],
    );
    await seed.stop(); // close() would remove the data dir

    // Stripe answers slowly, and Slipway is killed after the second meter event reached it.
    stripe.meterDelayMs = 400;
    const start = async () => {
      const proc = spawnSlipway({
        ...store.env,
        ...stripeEnv(),
        SLIPWAY_PORT: '0',
        SLIPWAY_ROUTER_PORT: '0',
        SLIPWAY_BILLING_METER_INTERVAL_SECONDS: '1',
      });
      running.push(proc);
      await proc.waitForOutput(/"msg":"slipway is up"/, 30_000);
      return proc;
    };
    const a = await start();
    await waitFor('two meter events at Stripe', async () => stripe.meterRequests.length >= 2, 20_000, 20);
    a.child.kill('SIGKILL');
    await within(a.exited, 15_000, 'exit after SIGKILL');
    const beforeRestart = stripe.meterEvents.size;
    stripe.meterDelayMs = 0;

    const p = DEFAULT_CATALOG;
    const expected = new Map<string, number>([
      ['srv-meter-a', cents(100 * HOUR, 700) + cents(50 * HOUR, p.services.standard!)],
      ['srv-meter-b', cents(20 * HOUR, p.services.pro!)],
      ['dpg-meter', cents(200 * HOUR, p.postgres.basic_1gb!)],
      ['red-meter', cents(300 * HOUR, p.keyValue.starter!)],
      ['build_minutes', (200 * p.buildMinutes.perThousand) / 1000], // 700 minutes, 500 included
      ['bandwidth', 30 * p.bandwidth.perGB], // 130 GB, 100 included
    ]);
    const b = await start();
    await waitFor('every resource reported', async () => stripe.meterEvents.size >= expected.size, 30_000);
    // A few more passes of the meter: nothing more is sent.
    const customer = checkout.body.customerId;
    const ours = () => stripe.meterRequests.filter((r) => r.payload?.stripe_customer_id === customer);
    const requests = ours().length;
    await new Promise((r) => setTimeout(r, 2500));
    expect(ours().length).toBe(requests);
    // The refused workspace's report was tried, and is tried again each pass, without holding anyone back.
    expect(stripe.meterRequests.some((r) => r.payload?.stripe_customer_id === goneCheckout.body.customerId)).toBe(true);
    b.child.kill('SIGTERM');
    await within(b.exited, 15_000, 'exit after SIGTERM');

    expect(beforeRestart).toBeLessThan(expected.size);
    const month = new Date(Date.UTC(monthStart.getUTCFullYear(), monthStart.getUTCMonth() - 1, 1))
      .toISOString()
      .slice(0, 7);
    const reported = new Map(
      [...stripe.meterEvents.values()].map((e) => [e.identifier.split(`_${month}_`)[1], Number(e.payload.value)]),
    );
    expect(reported).toEqual(expected);
    for (const e of stripe.meterEvents.values()) {
      expect(e).toMatchObject({ event_name: 'slipway_usage', payload: { stripe_customer_id: customer } });
      expect(e.timestamp).toBe(monthStart.getTime() / 1000 - 1);
    }
    // Every request, resends included, carried a value that matches the identifier's one value.
    for (const r of ours()) expect(Number(r.payload.value)).toBe(reported.get(r.identifier.split(`_${month}_`)[1]));
  }, 120_000);
});
