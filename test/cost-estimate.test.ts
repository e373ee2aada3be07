/**
 * GET /v1/workspaces/:id/cost-estimate against a usage ledger seeded with known seconds: plan changes, a suspend (a
 * gap), a stretch across the month boundary, datastores, builds and bandwidth beyond what is included. Its quantities
 * must be exactly GET /v1/usage's; its amounts whole cents from the catalog's prices.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG } from '../src/core/billing/catalog.js';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { bootServer, type TestServer } from './helpers/server.js';

const HOUR = 3600_000;
let server: TestServer;
let api: Client;
let owner: TestUser;

/** One ledger entry, as the meter writes them. */
const entry = (resourceId: string, kind: string, plan: string, quantity: number, start: Date, end: Date) =>
  server.slipway.store.executeSql(
    `insert into usage_entries (workspace_id, resource_id, source_id, kind, plan, quantity, started_at, ended_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [owner.workspaceId, resourceId, `src-${Math.random()}`, kind, plan, quantity, start, end],
  );

beforeAll(async () => {
  server = await bootServer({ SLIPWAY_USAGE_INTERVAL_SECONDS: '3600' });
  api = client(server.url);
  owner = await signUp(api);
  const now = Date.now();
  const at = (msAgo: number) => new Date(now - msAgo);
  const monthStart = new Date(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1));
  // A service on starter for 3 h, suspended 30 min, then standard for 2 h until a minute ago.
  await entry('srv-cost-a', 'instance_seconds', 'starter', 3 * 3600, at(5.5 * HOUR + 60_000), at(2.5 * HOUR + 60_000));
  await entry('srv-cost-a', 'instance_seconds', 'standard', 2 * 3600, at(2 * HOUR + 60_000), at(60_000));
  // Two instances of another for an hour, and 4 h that straddle the month's start (half of it before).
  await entry('srv-cost-b', 'instance_seconds', 'pro', 2 * 3600, at(HOUR + 60_000), at(60_000));
  await entry(
    'srv-cost-b',
    'instance_seconds',
    'pro',
    4 * 3600,
    new Date(monthStart.getTime() - 2 * HOUR),
    new Date(monthStart.getTime() + 2 * HOUR),
  );
  await entry('dpg-cost', 'datastore_seconds', 'basic_1gb', 3 * 3600, at(3 * HOUR + 60_000), at(60_000));
  await entry('red-cost', 'datastore_seconds', 'starter', 3600, at(HOUR + 60_000), at(60_000));
  // 600 build minutes (100 beyond the 500 included), 150 GB (50 beyond 100).
  await entry('srv-cost-a', 'build_seconds', 'starter', 600 * 60, at(2 * HOUR), at(HOUR));
  await entry('srv-cost-a', 'bandwidth_bytes', 'starter', 150e9, at(2 * HOUR), at(HOUR));
}, 60_000);
afterAll(() => server?.close());

describe('cost estimate', () => {
  it("has /v1/usage's quantities exactly, and whole-cent amounts from the catalog", async () => {
    const estimate = (await api.get(`/v1/workspaces/${owner.workspaceId}/cost-estimate`, owner)).body;
    const usage = (await api.get(`/v1/usage?startTime=${estimate.startTime}&endTime=${estimate.endTime}`, owner)).body;
    expect(estimate).toMatchObject({ currency: 'usd', catalogVersion: DEFAULT_CATALOG.version });
    const cents = (hours: number, monthly: number) => Math.round((Math.round(hours * 3600) * monthly) / (30 * 86400));
    for (const r of usage.resources) {
      const mine = estimate.resources.find((e: any) => e.resourceId === r.resourceId);
      const byPlan = r.type === 'service' ? r.instanceHoursByPlan : r.datastoreHoursByPlan;
      const prices =
        r.type === 'service'
          ? DEFAULT_CATALOG.services
          : r.type === 'postgres'
            ? DEFAULT_CATALOG.postgres
            : DEFAULT_CATALOG.keyValue;
      expect(Object.fromEntries(mine.lineItems.map((l: any) => [l.plan, l.quantity]))).toEqual(byPlan);
      for (const l of mine.lineItems) {
        expect(Number.isInteger(l.amount)).toBe(true);
        expect(l.amount).toBe(cents(l.quantity, prices[l.plan as keyof typeof prices]!));
      }
    }
    const a = estimate.resources.find((e: any) => e.resourceId === 'srv-cost-a');
    // starter 3 h: 10,800 s × 700 / 2,592,000 = 2.92 → 3 cents; standard 2 h: 7,200 × 2,500 / 2,592,000 = 6.94 → 7.
    expect(a.lineItems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ plan: 'starter', quantity: 3, amount: 3 }),
        expect.objectContaining({ plan: 'standard', quantity: 2, amount: 7 }),
      ]),
    );
    const ws = usage.workspaces[0];
    const builds = estimate.lineItems.find((l: any) => l.item === 'build_minutes');
    const bandwidth = estimate.lineItems.find((l: any) => l.item === 'bandwidth');
    expect(builds).toMatchObject({ quantity: ws.buildMinutes, billableQuantity: 100, amount: 50 }); // $5 per 1,000
    expect(bandwidth).toMatchObject({ quantity: ws.bandwidthGB, billableQuantity: 50, amount: 1500 }); // 30 ¢/GB
    const total = [...estimate.resources, ...estimate.lineItems].reduce((s: number, x: any) => s + x.amount, 0);
    expect(estimate.costSoFar).toBe(total);
    // The ledger's resources do not exist (they stand for deleted ones): nothing runs, so nothing is added to the
    // month (test/cost-projection.test.ts projects resources that run).
    expect(estimate.projection).toEqual([]);
    expect(estimate.projectedCost).toBe(total);
  });

  it('is for the workspace\'s members only (viewers too); billing answers "not configured" without Stripe', async () => {
    const viewer = await addMember(api, owner, 'viewer');
    const stranger = await signUp(api);
    expect((await api.get(`/v1/workspaces/${owner.workspaceId}/cost-estimate`, viewer)).status).toBe(200);
    expect((await api.get(`/v1/workspaces/${owner.workspaceId}/cost-estimate`, stranger)).status).toBe(404);
    expect((await api.get('/v1/billing/configured', owner)).body).toEqual({ configured: false });
    const plans = await api.get('/v1/billing/plans', owner);
    expect(plans.status).toBe(501);
    expect(plans.body).toMatchObject({ code: 'not_configured', message: /SLIPWAY_STRIPE_SECRET_KEY/ });
  });

  it('prices from SLIPWAY_PRICE_CATALOG, and refuses to start on a bad one, naming the field', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-catalog-'));
    try {
      const file = path.join(dir, 'prices.yaml');
      writeFileSync(file, `version: test-1\ncurrency: eur\nservices: {starter: "seven"}\npostgres: {}\nkeyValue: {}\n`);
      await expect(bootServer({ SLIPWAY_PRICE_CATALOG: file })).rejects.toThrow(
        /services\.starter must be a whole number/,
      );
      writeFileSync(
        file,
        [
          'version: test-2',
          'currency: eur',
          'services: {starter: 2592000}', // one cent a second
          'postgres: {}',
          'keyValue: {}',
          'buildMinutes: {includedPerMonth: 0, perThousand: 0}',
          'bandwidth: {includedGBPerMonth: 0, perGB: 0}',
        ].join('\n'),
      );
      const other = await bootServer({ SLIPWAY_PRICE_CATALOG: file });
      try {
        const api2 = client(other.url);
        const user = await signUp(api2);
        const body = (await api2.get(`/v1/workspaces/${user.workspaceId}/cost-estimate`, user)).body;
        expect(body).toMatchObject({ currency: 'eur', catalogVersion: 'test-2', costSoFar: 0 });
      } finally {
        await other.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
