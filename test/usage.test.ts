/**
 * Usage metering on real fixture apps and datastores: instance-seconds while running (and not
 * after a suspend), build-seconds, router bandwidth, datastore-seconds, the ledger across a
 * Slipway restart (nothing lost, nothing counted twice, an instance that died while Slipway was
 * down not billed for the downtime), repeated ticks, period pro-rating, and the route's errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUsageMeter } from '../src/observability/usage/meter.js';
import { createUsageRepo } from '../src/store/repos/usage.js';
import { deployFixture, processesOf, viaRouter } from './helpers/apps.js';
import { addMember, client, signUp, type Caller, type Client, type TestUser } from './helpers/client.js';
import { hasRedisServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { sleep, waitFor } from './helpers/process.js';
import { bootServer, killApps, killDatastores, type TestServer } from './helpers/server.js';

const OPERATOR_TOKEN = 'operator-token-for-usage-tests-0123456789';
const INTERVAL_S = 0.3;
const ENV = {
  SLIPWAY_USAGE_INTERVAL_SECONDS: String(INTERVAL_S),
  SLIPWAY_OPERATOR_TOKEN: OPERATOR_TOKEN,
  SLIPWAY_DATASTORE_CHECK_MS: '300',
};
const redisOk = requireOrSkip('redis-server', hasRedisServer());

let server: TestServer;
let api: Client;
let owner: TestUser, viewer: TestUser, stranger: TestUser;

beforeAll(async () => {
  server = await bootServer(ENV);
  api = client(server.url);
  owner = await signUp(api);
  viewer = await addMember(api, owner, 'viewer');
  stranger = await signUp(api);
});
afterAll(() => server?.close());

const usage = async (as: Caller, query = '') => {
  const res = await api.get(`/v1/usage${query}`, as);
  expect(res.status, res.text).toBe(200);
  return res.body;
};
const resourceOf = (body: any, id: string) => body.resources.find((r: any) => r.resourceId === id);
const instanceSecondsOf = async (serviceId: string) =>
  ((resourceOf(await usage(owner), serviceId)?.instanceHours ?? 0) as number) * 3600;
const sql = (text: string, values: unknown[] = []) => server.slipway.store.executeSql(text, values);

/** The instance ids and start times of a service, as recorded. */
async function instancesOf(serviceId: string) {
  const { rows } = await sql(
    `select id, status, started_at, stopped_at from instances where service_id = $1 order by started_at`,
    [serviceId],
  );
  return rows.map((r) => ({
    id: r.id as string,
    status: r.status as string,
    startedAt: new Date(r.started_at),
    stoppedAt: r.stopped_at ? new Date(r.stopped_at) : null,
  }));
}

/** A source's stretches must follow each other with no gap and no overlap. */
async function expectContiguous(sourceId: string, kind = 'instance_seconds') {
  const { rows } = await sql(
    `select started_at, ended_at, quantity from usage_entries where source_id = $1 and kind = $2 order by started_at`,
    [sourceId, kind],
  );
  for (let i = 1; i < rows.length; i++)
    expect(new Date(rows[i].started_at).getTime()).toBe(new Date(rows[i - 1].ended_at).getTime());
  for (const r of rows)
    expect(Number(r.quantity)).toBeCloseTo(
      (new Date(r.ended_at).getTime() - new Date(r.started_at).getTime()) / 1000,
      3,
    );
  return rows.length;
}

describe('instance-seconds', () => {
  it('grow while an instance runs and stop growing after a suspend', async () => {
    const { service, deploy } = await deployFixture(api, owner, 'node-web');
    expect(deploy.status).toBe('live');
    const grown = await waitFor(
      'metered seconds',
      async () => ((await instanceSecondsOf(service.id)) > 0 ? instanceSecondsOf(service.id) : undefined),
      10_000,
    );
    await sleep(1000);
    const later = await instanceSecondsOf(service.id);
    expect(later).toBeGreaterThan(grown + 0.5);
    const [instance] = await instancesOf(service.id);
    expect(later).toBeLessThanOrEqual((Date.now() - instance!.startedAt.getTime()) / 1000 + 0.05);

    const body = await usage(owner);
    const r = resourceOf(body, service.id);
    expect(r).toMatchObject({ ownerId: owner.workspaceId, type: 'service', name: service.name });
    expect(r.instanceHoursByPlan.starter).toBeCloseTo(r.instanceHours, 9);
    expect(body.workspaces).toEqual([expect.objectContaining({ ownerId: owner.workspaceId })]);
    expect(body.totals.instanceHours).toBeGreaterThanOrEqual(r.instanceHours);

    expect((await api.post(`/v1/services/${service.id}/suspend`, undefined, owner)).status).toBeLessThan(300);
    await waitFor('the instance to stop', async () =>
      (await instancesOf(service.id)).every((i) => i.status === 'stopped'),
    );
    await sleep(INTERVAL_S * 1000 * 2);
    const atSuspend = await instanceSecondsOf(service.id);
    await sleep(1000);
    expect(await instanceSecondsOf(service.id)).toBeCloseTo(atSuspend, 6);
    const [stopped] = await instancesOf(service.id);
    // Billed exactly from its start to its stop.
    expect(atSuspend).toBeCloseTo((stopped!.stoppedAt!.getTime() - stopped!.startedAt.getTime()) / 1000, 2);
    await expectContiguous(stopped!.id);
  });
});

describe('build-seconds', () => {
  it('bills a build as it runs and up to its end, with the service plan', async () => {
    const before = Date.now();
    // A build of a second or so: several meter passes (0.3 s) run while it does.
    const { service, deploy } = await deployFixture(api, owner, 'node-build', {
      serviceDetails: {
        runtime: 'node',
        plan: 'standard',
        envSpecificDetails: { buildCommand: 'sleep 1 && node build.js' },
      },
    });
    expect(deploy.status).toBe('live');
    const { rows } = await sql(
      `select plan, quantity, started_at, ended_at, resource_id from usage_entries where kind = 'build_seconds' and source_id = $1 order by started_at`,
      [deploy.id],
    );
    expect(rows.length).toBeGreaterThanOrEqual(2); // stretches, then the closing entry at the end
    // Billed as it ran: passes wrote stretches before the one its end writes (recordBuild alone writes one).
    expect(rows.filter((r) => Number(r.quantity) > 0).length).toBeGreaterThanOrEqual(2);
    for (const row of rows) expect(row).toMatchObject({ plan: 'standard', resource_id: service.id });
    await expectContiguous(deploy.id, 'build_seconds');
    const closing = rows.at(-1)!;
    expect([Number(closing.quantity), new Date(closing.started_at).getTime()]).toEqual([
      0,
      new Date(closing.ended_at).getTime(),
    ]);
    const total = rows.reduce((sum, r) => sum + Number(r.quantity), 0);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThan((Date.now() - before) / 1000);
    await sleep(INTERVAL_S * 1000 * 3);
    expect(
      (
        await sql(`select count(*)::int as n from usage_entries where kind = 'build_seconds' and source_id = $1`, [
          deploy.id,
        ])
      ).rows[0].n,
    ).toBe(rows.length); // nothing after the end
    const r = resourceOf(await usage(owner), service.id);
    expect(r.buildMinutes).toBeCloseTo(total / 60, 9);
    expect(r.buildMinutesByPlan).toEqual({ standard: r.buildMinutes });
    await api.delete(`/v1/services/${service.id}`, owner);
  });
});

describe('bandwidth', () => {
  it('adds up the bytes of several processes flushing at the same moment', async () => {
    const created = await api.post(
      '/v1/services',
      { type: 'web_service', name: 'two-routers', serviceDetails: { runtime: 'node' } },
      owner,
    );
    expect(created.status, created.text).toBe(201);
    const id = created.body.service.id;
    // Two meters on one store, as two Slipway processes with a router each.
    const meters = [1, 2].map(() =>
      createUsageMeter({
        repo: createUsageRepo(server.slipway.store.db),
        intervalMs: 60_000,
        log: { warn: () => undefined },
        isAlive: () => false,
      }),
    );
    meters[0]!.traffic.record(id, 1000);
    meters[1]!.traffic.record(id, 2345);
    const at = new Date(Date.now() + 10);
    await Promise.all(meters.map((m) => m.tick(at)));
    // A period through `at` (a default one ends now, before `at`, and would take only part of the stretch).
    const period = `?startTime=${new Date(at.getTime() - 60_000).toISOString()}&endTime=${new Date(at.getTime() + 1000).toISOString()}`;
    expect(resourceOf(await usage(owner, period), id).bandwidthBytes).toBe(3345);
    await api.delete(`/v1/services/${id}`, owner);
  });

  it('counts the router bytes of a service', async () => {
    const { service } = await deployFixture(api, owner, 'node-web');
    let bodyBytes = 0;
    for (let i = 0; i < 20; i++) {
      const reply = await viaRouter(server.slipway.routerPort, service.slug, `/?n=${i}`);
      expect(reply.status).toBe(200);
      bodyBytes += Buffer.byteLength(reply.text);
    }
    await waitFor(
      'bandwidth',
      async () => resourceOf(await usage(owner), service.id)?.bandwidthBytes > bodyBytes,
      10_000,
    ); // bodies plus headers
    // Bytes are flushed each pass, so a pass may have caught only part of them: let the next one run.
    await sleep(INTERVAL_S * 1000 * 2);
    const r = resourceOf(await usage(owner), service.id);
    await sleep(INTERVAL_S * 1000 * 2);
    expect(resourceOf(await usage(owner), service.id).bandwidthBytes).toBe(r.bandwidthBytes); // nothing more without requests
    expect(r.bandwidthBytes).toBeLessThan(bodyBytes + 20 * 1024);
    expect(r.bandwidthGB).toBeCloseTo(r.bandwidthBytes / 1e9, 12);
    // Deleting the service meters its instances' last stretch first; their usage stays in the ledger.
    const [instance] = await instancesOf(service.id);
    expect((await api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
    const after = resourceOf(await usage(owner), service.id);
    expect(after.name).toBeUndefined();
    const { rows } = await sql(`select max(ended_at) as last from usage_entries where source_id = $1`, [instance!.id]);
    expect(Date.now() - new Date(rows[0].last).getTime()).toBeLessThan(5000);
  });
});

describe.skipIf(!redisOk)('datastore-seconds', () => {
  it('grow while a key-value datastore is up and stop while it is suspended', async () => {
    const created = await api.post('/v1/key-value', { name: 'usage-cache', plan: 'free' }, owner);
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await untilStatus(api, owner, `/v1/key-value/${id}`, 'available');
    const hours = async () => (resourceOf(await usage(owner), id)?.datastoreHours ?? 0) as number;
    const first = await waitFor('datastore seconds', async () => ((await hours()) > 0 ? hours() : undefined), 10_000);
    await sleep(1000);
    const second = await hours();
    expect((second - first) * 3600).toBeGreaterThan(0.5);
    const r = resourceOf(await usage(owner), id);
    expect(r).toMatchObject({ type: 'key_value', name: 'usage-cache' });
    expect(r.datastoreHoursByPlan.free).toBeCloseTo(r.datastoreHours, 9);

    expect((await api.post(`/v1/key-value/${id}/suspend`, undefined, owner)).status).toBe(202);
    await untilStatus(api, owner, `/v1/key-value/${id}`, 'suspended');
    await sleep(INTERVAL_S * 1000 * 3);
    const suspended = await hours();
    await sleep(1000);
    expect(await hours()).toBeCloseTo(suspended, 9);
    expect((await api.post(`/v1/key-value/${id}/resume`, undefined, owner)).status).toBe(202);
    await untilStatus(api, owner, `/v1/key-value/${id}`, 'available');
    await waitFor('billing again', async () => (await hours()) > suspended, 10_000);
    // Resumed: not billed for the suspension (growth since is at most the wall-clock since the resume).
    expect((await api.delete(`/v1/key-value/${id}`, owner)).status).toBe(204);
  });
});

describe('the ledger across restarts', () => {
  interface Restarts {
    /** The server now running (another object after `restart`). */
    s: TestServer;
    user: TestUser;
    api(): Client;
    /** Stops Slipway, runs `whileDown`, waits `downMs`, boots it again on the same data; returns when it stopped. */
    restart(downMs: number, whileDown?: () => void): Promise<number>;
  }
  /** A test's own server, restarted by the test; its apps and data go at the end. */
  async function withRestarts(test: (r: Restarts) => Promise<void>) {
    const first = await bootServer(ENV);
    const r: Restarts = {
      s: first,
      user: await signUp(client(first.url)),
      api: () => client(r.s.url),
      async restart(downMs, whileDown) {
        const { dataDir, databaseUrl } = r.s;
        await r.s.stop();
        const stoppedAt = Date.now();
        whileDown?.();
        await sleep(downMs);
        r.s = await bootServer(ENV, { dataDir, databaseUrl });
        return stoppedAt;
      },
    };
    try {
      await test(r);
    } finally {
      await killApps(r.s.slipway).catch(() => undefined);
      await killDatastores(r.s.slipway).catch(() => undefined);
      await r.s.stop();
      if (r.s !== first) await first.close();
    }
  }
  it('loses and double-counts nothing when Slipway stops while an instance runs', () =>
    withRestarts(async (r) => {
      const { user } = r;
      const c = r.api();
      const { service } = await deployFixture(c, user, 'node-web');
      const seconds = async () =>
        ((resourceOf((await c.get('/v1/usage', user)).body, service.id)?.instanceHours ?? 0) as number) * 3600;
      await waitFor('metered', async () => (await seconds()) > 0.5, 10_000);
      await r.restart(1500); // the instance keeps running while Slipway is down
      const s = r.s;
      const api2 = r.api();
      await sleep(INTERVAL_S * 1000 * 3);
      const { rows } = await s.slipway.store.executeSql(
        `select id, started_at from instances where service_id = $1 and status = 'running'`,
        [service.id],
      );
      expect(rows).toHaveLength(1);
      const startedAt = new Date(rows[0].started_at).getTime();
      const asked = Date.now();
      const metered = (resourceOf((await api2.get('/v1/usage', user)).body, service.id).instanceHours as number) * 3600;
      const answered = Date.now();
      // Up to the last tick before the report was read (at most an interval before it was asked for, plus slack): the
      // downtime (1.5 s) is billed once. The request's own time (long on a busy machine) counts on neither side.
      expect(metered).toBeLessThanOrEqual((answered - startedAt) / 1000 + 0.05);
      expect(metered).toBeGreaterThan((asked - startedAt) / 1000 - 1.0);
      const { rows: entries } = await s.slipway.store.executeSql(
        `select started_at, ended_at from usage_entries where source_id = $1 and kind = 'instance_seconds' order by started_at`,
        [rows[0].id],
      );
      for (let i = 1; i < entries.length; i++)
        expect(new Date(entries[i].started_at).getTime()).toBe(new Date(entries[i - 1].ended_at).getTime());

      // Running the meter twice at the same moment adds nothing the second time, and racing ticks never overlap.
      const meter = createUsageMeter({
        repo: createUsageRepo(s.slipway.store.db),
        intervalMs: 60_000,
        log: { warn: () => undefined },
        isAlive: ({ pid }) => {
          try {
            process.kill(pid, 0);
            return true;
          } catch {
            return false;
          }
        },
      });
      const at = new Date();
      // Slipway's own meter (every 0.3 s) may win the race for this stretch's start, leaving the
      // stretch up to `at` for the next pass: tick until the ledger reaches `at`.
      const endOfLedger = async () =>
        new Date(
          (
            await s.slipway.store.executeSql(
              `select max(ended_at) as t from usage_entries where source_id = $1 and kind = 'instance_seconds'`,
              [rows[0].id],
            )
          ).rows[0].t,
        ).getTime();
      await waitFor(
        'the ledger to reach the tick',
        async () => {
          await meter.tick(at);
          return (await endOfLedger()) >= at.getTime();
        },
        5_000,
        0,
      );
      // Entries up to `at` (Slipway's own meter goes on appending after it).
      const count = async () =>
        Number(
          (await s.slipway.store.executeSql(`select count(*)::int as n from usage_entries where ended_at <= $1`, [at]))
            .rows[0].n,
        );
      const n = await count();
      expect(await meter.tick(at)).toBe(0);
      expect(await count()).toBe(n);
      const other = createUsageMeter({
        repo: createUsageRepo(s.slipway.store.db),
        intervalMs: 60_000,
        log: { warn: () => undefined },
        isAlive: () => true,
      });
      const t2 = new Date(at.getTime() + 100);
      await Promise.all([meter.tick(t2), other.tick(t2), meter.tick(new Date(at.getTime() + 50))]);
      const { rows: all } = await s.slipway.store.executeSql(
        `select started_at, ended_at from usage_entries where source_id = $1 and kind = 'instance_seconds' order by started_at`,
        [rows[0].id],
      );
      for (let i = 1; i < all.length; i++)
        expect(new Date(all[i].started_at).getTime()).toBe(new Date(all[i - 1].ended_at).getTime());
    }));

  it('bills a build cut off by a crash up to the last pass before it, not through the downtime', () =>
    withRestarts(async (r) => {
      const { user } = r;
      const c = r.api();
      const created = await c.post(
        '/v1/services',
        { type: 'web_service', name: 'cut-build', serviceDetails: { runtime: 'node' } },
        user,
      );
      // The state a crash leaves: a build under way since 2 s ago (a graceful stop would end it).
      const deployId = `dep-interrupted-${Date.now()}`;
      await r.s.slipway.store.executeSql(
        `insert into deploys (id, service_id, status, trigger, started_at) values ($1, $2, 'build_in_progress', 'api', now() - interval '2 seconds')`,
        [deployId, created.body.service.id],
      );
      const billed = async () =>
        (
          await r.s.slipway.store.executeSql(
            `select coalesce(sum(quantity), 0)::float8 as q, max(ended_at) as last from usage_entries where kind = 'build_seconds' and source_id = $1`,
            [deployId],
          )
        ).rows[0];
      await waitFor('billed while it runs', async () => Number((await billed()).q) > 2.5, 10_000);
      const stoppedAt = await r.restart(2000);
      expect((await r.api().get(`/v1/services/${created.body.service.id}/deploys/${deployId}`, user)).body.status).toBe(
        'build_failed',
      );
      const atStop = await billed();
      expect(new Date(atStop.last).getTime()).toBeLessThanOrEqual(stoppedAt);
      await sleep(INTERVAL_S * 1000 * 3);
      const after = await billed();
      expect(Number(after.q)).toBeCloseTo(Number(atStop.q), 6); // not a second of the downtime, nor after
      expect(new Date(after.last).getTime()).toBeLessThanOrEqual(stoppedAt);
    }));

  it('does not bill the downtime of an instance that died while Slipway was down', () =>
    withRestarts(async (r) => {
      const { user } = r;
      const c = r.api();
      const { service } = await deployFixture(c, user, 'node-web');
      await waitFor(
        'metered',
        async () =>
          ((resourceOf((await c.get('/v1/usage', user)).body, service.id)?.instanceHours ?? 0) as number) * 3600 > 0.5,
        10_000,
      );
      const { rows: before } = await r.s.slipway.store.executeSql(
        `select id, started_at from instances where service_id = $1 and status = 'running'`,
        [service.id],
      );
      const stoppedAt = await r.restart(3000, () => {
        for (const pid of processesOf(service.id)) process.kill(pid, 'SIGKILL'); // dead for 3 s while Slipway is down
      });
      const s = r.s;
      // Recovery restarts it (same instance id, new process).
      const restartedAt = await waitFor('the restart', async () => {
        const { rows } = await s.slipway.store.executeSql(
          `select started_at from instances where id = $1 and status = 'running'`,
          [before[0].id],
        );
        const at = rows[0] ? new Date(rows[0].started_at).getTime() : 0;
        return at > stoppedAt ? at : undefined;
      });
      await sleep(INTERVAL_S * 1000 * 3);
      const metered =
        (resourceOf((await client(s.url).get('/v1/usage', user)).body, service.id).instanceHours as number) * 3600;
      const firstLife = (stoppedAt - new Date(before[0].started_at).getTime()) / 1000;
      const secondLife = (Date.now() - restartedAt) / 1000;
      expect(metered).toBeLessThanOrEqual(firstLife + secondLife + 0.05);
      expect(metered).toBeGreaterThan(firstLife + secondLife - 1.0);
    }));
});

describe('GET /v1/usage', () => {
  it('counts stretches straddling the period pro rata', async () => {
    const repo = createUsageRepo(server.slipway.store.db);
    const ws = stranger.workspaceId;
    const hour = (h: number) => new Date(Date.UTC(2020, 0, 1, h));
    await repo.append([
      {
        workspaceId: ws,
        resourceId: 'srv-prorata0000000000000',
        sourceId: 'srv-prorata0000000000000-abcde',
        kind: 'instance_seconds',
        plan: 'pro',
        quantity: 3600,
        startedAt: hour(0),
        endedAt: hour(1),
      },
      {
        workspaceId: ws,
        resourceId: 'srv-prorata0000000000000',
        sourceId: 'srv-prorata0000000000000',
        kind: 'bandwidth_bytes',
        plan: 'pro',
        quantity: 4000,
        startedAt: hour(0),
        endedAt: hour(1),
      },
      {
        workspaceId: ws,
        resourceId: 'dpg-prorata0000000000000',
        sourceId: 'dpg-prorata0000000000000',
        kind: 'datastore_seconds',
        plan: 'basic_256mb',
        quantity: 7200,
        startedAt: hour(0),
        endedAt: hour(2),
      },
    ]);
    const body = await usage(
      stranger,
      `?startTime=${new Date(Date.UTC(2020, 0, 1, 0, 30)).toISOString()}&endTime=${hour(3).toISOString()}`,
    );
    expect(body.startTime).toBe('2020-01-01T00:30:00.000Z');
    expect(body.totals.instanceHours).toBeCloseTo(0.5, 9);
    expect(body.totals.instanceHoursByPlan).toEqual({ pro: expect.closeTo(0.5, 9) });
    expect(body.totals.bandwidthBytes).toBeCloseTo(2000, 6);
    expect(body.totals.datastoreHours).toBeCloseTo(1.5, 9);
    expect(resourceOf(body, 'dpg-prorata0000000000000')).toMatchObject({
      type: 'postgres',
      datastoreHoursByPlan: { basic_256mb: expect.closeTo(1.5, 9) },
    });
    expect(resourceOf(body, 'srv-prorata0000000000000').name).toBeUndefined();
    // Outside the period: nothing; the owner's workspace does not see it.
    const none = await usage(stranger, `?startTime=2020-01-01T05:00:00Z&endTime=2020-01-02T00:00:00Z`);
    expect(none).toMatchObject({
      totals: { instanceHours: 0, bandwidthBytes: 0 },
      resources: [],
      workspaces: [{ ownerId: ws }],
    });
    expect(
      resourceOf(await usage(owner, '?startTime=2020-01-01T00:00:00Z'), 'srv-prorata0000000000000'),
    ).toBeUndefined();
  });

  it('lets viewers read, the operator see every workspace, and answers 400 and 404', async () => {
    expect((await usage(viewer, `?ownerId=${owner.workspaceId}`)).workspaces.map((w: any) => w.ownerId)).toEqual([
      owner.workspaceId,
    ]);
    const all = await usage({ token: OPERATOR_TOKEN }, '?startTime=2020-01-01T00:00:00Z');
    const owners = all.workspaces.map((w: any) => w.ownerId);
    expect(owners).toEqual(expect.arrayContaining([owner.workspaceId, stranger.workspaceId]));
    expect(
      (await usage({ token: OPERATOR_TOKEN }, `?ownerId=${owner.workspaceId}`)).workspaces.map((w: any) => w.ownerId),
    ).toEqual([owner.workspaceId]);

    const bad = await api.get('/v1/usage?startTime=2024-02-01T00:00:00Z&endTime=2024-01-01T00:00:00Z', owner);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'bad_request', message: expect.stringContaining('startTime') });
    expect(typeof bad.body.id).toBe('string');
    const invalid = await api.get('/v1/usage?startTime=yesterday', owner);
    expect(invalid.status).toBe(400);
    expect(invalid.body.code).toBe('validation_failed');
    expect((await api.get(`/v1/usage?ownerId=${stranger.workspaceId}`, owner)).status).toBe(404);
    expect((await api.get('/v1/usage')).status).toBe(401);
  });
});
