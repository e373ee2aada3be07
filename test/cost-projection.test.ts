/**
 * The new user's month (issue 30 §6): 12 starter services, a basic Postgres and a key-value store, all created today
 * through the API. projectedCost is what they will cost by the month's end at their plans' prices, plus what was spent
 * so far; before, it extrapolated the cost so far by the time elapsed, and answered 0.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG } from '../src/core/billing/catalog.js';
import { signUp, type TestUser } from './helpers/client.js';
import { hasPostgresServer, hasRedisServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { useServer } from './helpers/server.js';

const pgOk = requireOrSkip('postgres/initdb', hasPostgresServer());
const redisOk = requireOrSkip('redis-server', hasRedisServer());
const MONTH_MS = 30 * 86_400_000;

const t = useServer();
let owner: TestUser;
beforeAll(async () => {
  owner = await signUp(t.api);
});
const services: Array<{ id: string }> = [];

const createService = async (name: string, serviceDetails: Record<string, unknown> = {}, type = 'web_service') => {
  const res = await t.api.post(
    '/v1/services',
    { type, name, serviceDetails: { runtime: 'node', ...serviceDetails } },
    owner,
  );
  expect(res.status).toBe(201);
  return res.body.service as { id: string };
};
const estimate = async () => {
  const res = await t.api.get(`/v1/workspaces/${owner.workspaceId}/cost-estimate`, owner);
  expect(res.status).toBe(200);
  return res.body;
};
/** A monthly price's share of the time from the estimate's now (endTime) to periodEnd, unrounded. */
const rest = (e: { endTime: string; periodEnd: string }, monthly: number, instances = 1) =>
  (monthly * instances * (Date.parse(e.periodEnd) - Date.parse(e.endTime))) / MONTH_MS;
const itemOf = (e: any, id: string) => e.projection.find((p: any) => p.resourceId === id);

describe.skipIf(!pgOk || !redisOk)('projected cost', () => {
  it("is the month's cost so far plus the running resources' prices to the month's end: 12 starter services, a basic Postgres, a key-value store", async () => {
    for (let i = 0; i < 12; i++) services.push(await createService(`svc-${i}`, { plan: 'starter' }));
    const pg = await t.api.post('/v1/postgres', { name: 'db', plan: 'basic_256mb' }, owner);
    const kv = await t.api.post('/v1/key-value', { name: 'cache', plan: 'starter' }, owner);
    expect([pg.status, kv.status]).toEqual([201, 201]);
    await untilStatus(t.api, owner, `/v1/postgres/${pg.body.id}`, 'available');
    await untilStatus(t.api, owner, `/v1/key-value/${kv.body.id}`, 'available');

    const e = await estimate();
    const expected =
      e.costSoFar +
      12 * rest(e, DEFAULT_CATALOG.services.starter!) +
      rest(e, DEFAULT_CATALOG.postgres.basic_256mb!) +
      rest(e, DEFAULT_CATALOG.keyValue.starter!);
    expect(e.projectedCost).toBeGreaterThan(0);
    // Each of the 14 items is rounded to the cent once.
    expect(Math.abs(e.projectedCost - expected)).toBeLessThanOrEqual(14 * 0.5);
    expect(e.projection).toHaveLength(14);
    expect(itemOf(e, services[0]!.id)).toEqual({
      resourceId: services[0]!.id,
      type: 'service',
      name: 'svc-0',
      plan: 'starter',
      instances: 1,
      unitPrice: 700,
      amount: Math.round(rest(e, 700)),
    });
    expect(itemOf(e, pg.body.id)).toMatchObject({
      type: 'postgres',
      plan: 'basic_256mb',
      instances: 1,
      unitPrice: 600,
    });
    expect(itemOf(e, kv.body.id)).toMatchObject({ type: 'key_value', plan: 'starter', instances: 1, unitPrice: 1000 });
    // A whole month of them is $84 + $6 + $10: the projection is that, to the share of the month that is left.
    const share = (Date.parse(e.periodEnd) - Date.parse(e.endTime)) / MONTH_MS;
    expect(Math.abs(e.projectedCost - e.costSoFar - 10_000 * share)).toBeLessThanOrEqual(7);
  });

  it('counts each instance; a suspended service stops adding to it, a resumed one adds again', async () => {
    const svc = services[1]!;
    const ahead = (e: any) => e.projectedCost - e.costSoFar;
    const before = await estimate();
    const one = itemOf(before, svc.id).amount as number;

    expect((await t.api.post(`/v1/services/${svc.id}/suspend`, undefined, owner)).status).toBe(202);
    const suspended = await estimate();
    expect(itemOf(suspended, svc.id)).toBeUndefined();
    expect(suspended.projection).toHaveLength(13);
    expect(Math.abs(ahead(before) - ahead(suspended) - one)).toBeLessThanOrEqual(1); // a second passed, at most

    expect((await t.api.post(`/v1/services/${svc.id}/resume`, undefined, owner)).status).toBe(202);
    expect(itemOf(await estimate(), svc.id)).toMatchObject({ instances: 1 });

    const scaled = await t.api.patch(`/v1/services/${svc.id}`, { serviceDetails: { numInstances: 3 } }, owner);
    expect(scaled.status).toBe(200);
    const three = await estimate();
    expect(itemOf(three, svc.id)).toMatchObject({ instances: 3, unitPrice: 700 });
    expect(Math.abs(itemOf(three, svc.id).amount - rest(three, 700, 3))).toBeLessThanOrEqual(0.5);
  });

  it('adds nothing for a free plan; cron jobs and static sites (not running all month) are left out', async () => {
    const free = await createService('free-svc', { plan: 'free' });
    const cron = await createService('nightly', { plan: 'starter', schedule: '0 3 * * *' }, 'cron_job');
    const site = await createService('site', {}, 'static_site');
    const e = await estimate();
    expect(itemOf(e, free.id)).toMatchObject({ plan: 'free', unitPrice: 0, amount: 0 });
    expect(itemOf(e, cron.id)).toBeUndefined();
    expect(itemOf(e, site.id)).toBeUndefined();
  });
});
