/**
 * List pages and services are kept per process until a table they were read from changes (src/core/read-cache.ts).
 * Every write shows in the next read of a cached page: a write through this process at once, the deploy engine's
 * own writes as they happen, a write straight into Postgres within a second.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createReadCache } from '../src/core/read-cache.js';
import { packFixture, upload } from './helpers/apps.js';
import { signUp, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { TEST_DATABASE_URL, useServer } from './helpers/server.js';

const t = useServer({ SLIPWAY_READ_CACHE_SECONDS: '600' }); // far longer than any test: only a change may drop a page
const webService = (name: string) => ({
  type: 'web_service',
  name,
  serviceDetails: { runtime: 'node', envSpecificDetails: { startCommand: 'node server.js' } },
});

const names = async (owner: TestUser) => {
  const res = await t.api.get(`/v1/services?ownerId=${owner.workspaceId}&limit=20`, owner);
  expect(res.status).toBe(200);
  return res.body.map((e: { service: { name: string } }) => e.service.name).sort();
};
const events = async (owner: TestUser) =>
  (await t.api.get(`/v1/audit-logs?ownerId=${owner.workspaceId}&limit=5`, owner)).body.map(
    (e: { auditLog: { event: string } }) => e.auditLog.event,
  );

describe('read cache', () => {
  it('shows a write through the API in the very next read of a cached page', async () => {
    const owner = await signUp(t.api);
    const other = await signUp(t.api);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      expect(await names(owner)).toHaveLength(i);
      expect(await names(owner)).toHaveLength(i); // now from the cache
      const created = await t.api.post('/v1/services', webService(`svc-${i}`), owner);
      expect(created.status).toBe(201);
      ids.push(created.body.service.id);
      expect(await names(owner)).toContain(`svc-${i}`);
      expect(await names(other)).toEqual([]); // another workspace's page is its own
    }
    const [first] = ids as [string];
    expect((await t.api.get(`/v1/services/${first}`, owner)).body.name).toBe('svc-0');
    expect((await t.api.patch(`/v1/services/${first}`, { name: 'renamed' }, owner)).status).toBe(200);
    expect((await t.api.get(`/v1/services/${first}`, owner)).body.name).toBe('renamed');
    expect(await names(owner)).toContain('renamed');
    expect(await events(owner)).toContain('UpdateServiceNameEvent');

    expect((await t.api.delete(`/v1/services/${first}`, owner)).status).toBe(204);
    expect((await t.api.get(`/v1/services/${first}`, owner)).status).toBe(404);
    expect(await names(owner)).not.toContain('renamed');
    expect((await events(owner))[0]).toBe('DeleteServerEvent');
  });

  it("shows the deploy engine's status changes in a cached list of deploys", async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post('/v1/services', webService('engine'), owner);
    const service = created.body.service;
    const statuses = async () =>
      (await t.api.get(`/v1/services/${service.id}/deploys?limit=20`, owner)).body.map(
        (e: { deploy: { status: string } }) => e.deploy.status,
      );
    expect(await statuses()).toEqual([]);
    const up = await upload(t.api, owner, service.id, await packFixture('node-web'));
    expect(up.status).toBe(201);
    const seen = new Set<string>();
    await waitFor(
      'the list to show the deploy live',
      async () => {
        const [status] = await statuses();
        if (status) seen.add(status);
        return status === 'live';
      },
      60_000,
      20,
    );
    expect(seen.size).toBeGreaterThan(1); // read while it built and again once live
  });

  it.skipIf(!TEST_DATABASE_URL)('shows a write made straight into Postgres within a second', async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post('/v1/services', webService('inside'), owner);
    expect(await names(owner)).toEqual(['inside']);
    const db = new pg.Client({ connectionString: t.server.databaseUrl! });
    await db.connect();
    try {
      await db.query('update services set name = $1 where id = $2', ['outside', created.body.service.id]);
    } finally {
      await db.end();
    }
    await waitFor('the page to show the outside write', async () => (await names(owner))[0] === 'outside', 1000, 20);
  });
});

describe('read cache, in one process', () => {
  it('does not keep a page read while its table changed', async () => {
    const cache = createReadCache({ ttlMs: 60_000 });
    let rows = ['old'];
    // The change commits while the load is under way: the loaded page may predate it.
    const racing = () =>
      cache.get('k', ['services'], async () => {
        const read = rows;
        rows = ['new'];
        cache.onNotify('services');
        return read;
      });
    expect(await racing()).toEqual(['old']);
    expect(await cache.get('k', ['services'], async () => rows)).toEqual(['new']);
    expect(cache.size).toBe(1);
    cache.onNotify('deploys'); // another table: kept
    expect(await cache.get('k', ['services'], async () => ['unread'])).toEqual(['new']);
    cache.onNotify(undefined); // some changes may have been missed: nothing is kept
    expect(cache.size).toBe(0);
  });

  it('keeps a page read while another table changed, and never keeps a lookup that found nothing', async () => {
    const cache = createReadCache({ ttlMs: 60_000 });
    const loaded = await cache.get('k', ['services'], async () => {
      cache.onNotify('deploys');
      return ['page'];
    });
    expect(loaded).toEqual(['page']);
    expect(cache.size).toBe(1);
    expect(await cache.get('service:srv-made-up', ['services'], async () => undefined)).toBeUndefined();
    expect(cache.size).toBe(1);
  });

  it('hands out kept answers that cannot be modified', async () => {
    const cache = createReadCache({ ttlMs: 60_000 });
    const page = await cache.get('k', ['services'], async () => [{ name: 'a', details: { plan: 'starter' } }]);
    expect(() => {
      page[0]!.details.plan = 'pro';
    }).toThrow(TypeError);
  });
});
