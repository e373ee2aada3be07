/**
 * Render's POST /v1/services/:id/scale: the supervisor runs that many instances of the live deploy, the router spreads
 * requests over them, and each change is Render's instance_count_changed event.
 */
import { describe, expect, it } from 'vitest';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

// Samples and autoscaling rounds every half second, and short waits between changes: a test sees them in seconds.
const t = useServer({
  SLIPWAY_METRICS_INTERVAL: '0.5',
  SLIPWAY_AUTOSCALE_INTERVAL: '0.5',
  SLIPWAY_AUTOSCALE_UP_COOLDOWN: '1',
  SLIPWAY_AUTOSCALE_DOWN_COOLDOWN: '1',
  // Samples of an instance's first 3 s (its start-up CPU) do not count: three idle instances just started go to 1
  // in one step, not to 2 on the CPU of their start.
  SLIPWAY_AUTOSCALE_WARMUP: '3',
});
const autoscaling = (min: number, max: number, cpu: number) => ({
  enabled: true,
  min,
  max,
  criteria: { cpu: { enabled: true, percentage: cpu }, memory: { enabled: false, percentage: 80 } },
});

describe('scaling', () => {
  it('runs three instances behind the router, then one, with an event for each change', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web');
    const base = `/v1/services/${service.id}`;
    const instances = async () => (await t.api.get(`${base}/instances`, owner)).body.map((i: any) => i.id).sort();

    const up = await t.api.post(`${base}/scale`, { numInstances: 3 }, owner);
    expect(up.status).toBe(202);
    const three = await waitFor(
      'three instances',
      async () => ((await instances()).length === 3 ? instances() : undefined),
      30_000,
    );
    // The router spreads requests over all three (each answers with its own instance id).
    const seen = await waitFor(
      'requests reaching every instance',
      async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 30; i++)
          ids.add((await viaRouter(t.server.slipway.routerPort, service.slug, '/', { agent: false })).json().instance);
        return ids.size === 3 ? [...ids].sort() : undefined;
      },
      20_000,
    );
    expect(seen).toEqual(three);
    expect((await t.api.get(base, owner)).body.serviceDetails.numInstances).toBe(3);

    expect((await t.api.post(`${base}/scale`, { numInstances: 1 }, owner)).status).toBe(202);
    const one = await waitFor(
      'one instance',
      async () => ((await instances()).length === 1 ? instances() : undefined),
      30_000,
    );
    expect(three).toContain(one[0]);
    expect((await viaRouter(t.server.slipway.routerPort, service.slug, '/', { agent: false })).status).toBe(200);

    const changes = (await t.api.get(`${base}/events?type=instance_count_changed`, owner)).body.map(
      (i: any) => i.event.details,
    );
    expect(changes).toEqual([
      { fromInstances: 3, toInstances: 1 },
      { fromInstances: 1, toInstances: 3 },
    ]);
  }, 120_000);

  it('refuses a count out of range, a static site, and another workspace', async () => {
    const owner = await signUp(t.api);
    const other = await signUp(t.api);
    const web = await t.api.post(
      '/v1/services',
      { type: 'web_service', name: 'sc', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const site = await t.api.post('/v1/services', { type: 'static_site', name: 'sc-site' }, owner);
    const scale = (id: string, body: unknown, as = owner) => t.api.post(`/v1/services/${id}/scale`, body, as);
    for (const numInstances of [0, 21, '3', 1.5])
      expect((await scale(web.body.service.id, { numInstances })).status).toBe(400);
    const refused = await scale(site.body.service.id, { numInstances: 2 });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/static_site runs no instances/);
    expect((await scale(web.body.service.id, { numInstances: 2 }, other)).status).toBe(404);
    expect((await t.api.get(`/v1/services/${web.body.service.id}`, owner)).body.serviceDetails.numInstances).toBe(1);
  });

  it("autoscales a CPU-burning service up to its max and an idle one down to its min, with Render's events", async () => {
    const owner = await signUp(t.api);
    const count = async (id: string) => (await t.api.get(`/v1/services/${id}/instances`, owner)).body.length;
    const eventsOf = async (id: string, type: string) =>
      (await t.api.get(`/v1/services/${id}/events?type=${type}&limit=50`, owner)).body.map((i: any) => i.event.details);
    // A free instance (a tenth of a core) that burns all of it: 100 % of its plan against a 50 % target.
    const { service: hot } = await deployFixture(t.api, owner, 'cpu-burner', {
      serviceDetails: { runtime: 'node', plan: 'free' },
    });
    const put = await t.api.put(`/v1/services/${hot.id}/autoscaling`, autoscaling(1, 2, 50), owner);
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual(autoscaling(1, 2, 50));
    const [first] = (await t.api.get(`/v1/services/${hot.id}/instances`, owner)).body;
    await waitFor('a second instance', async () => (await count(hot.id)) === 2, 30_000);
    // Not on its first 3 s of samples, however hot: the first instance had warmed up before it asked for a second.
    const [started] = (await t.api.get(`/v1/services/${hot.id}/events?type=autoscaling_started`, owner)).body;
    expect(Date.parse(started.event.timestamp) - Date.parse(first.createdAt)).toBeGreaterThanOrEqual(3000);
    expect((await t.api.get(`/v1/services/${hot.id}`, owner)).body.serviceDetails).toMatchObject({
      numInstances: 2,
      autoscaling: autoscaling(1, 2, 50),
    });
    expect((await eventsOf(hot.id, 'autoscaling_started'))[0]).toMatchObject({
      fromInstances: 1,
      toInstances: 2,
      targetCPU: 50,
      currentCPU: expect.any(Number),
    });
    expect(await eventsOf(hot.id, 'autoscaling_config_changed')).toEqual([{ toConfig: autoscaling(1, 2, 50) }]);
    // Still burning, it stays at its max.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await count(hot.id)).toBe(2);
    expect((await t.api.delete(`/v1/services/${hot.id}`, owner)).status).toBe(204);

    // An idle app at three instances goes down to its min; then, autoscaling removed, it keeps what it has.
    const { service: idle } = await deployFixture(t.api, owner, 'node-web', {
      serviceDetails: { runtime: 'node', plan: 'free', numInstances: 3 },
    });
    await waitFor('three instances', async () => (await count(idle.id)) === 3, 30_000);
    expect((await t.api.put(`/v1/services/${idle.id}/autoscaling`, autoscaling(1, 3, 60), owner)).status).toBe(200);
    await waitFor('one instance', async () => (await count(idle.id)) === 1, 30_000);
    // Ended once the samples say so (those of the stopped instances age out of its window first).
    await waitFor('autoscaling_ended', async () => (await eventsOf(idle.id, 'autoscaling_ended')).length === 1, 15_000);
    expect(await eventsOf(idle.id, 'autoscaling_ended')).toEqual([{ fromInstances: 3, toInstances: 1 }]);
    expect(await eventsOf(idle.id, 'autoscaling_started')).toMatchObject([{ fromInstances: 3, toInstances: 1 }]);
    expect((await t.api.delete(`/v1/services/${idle.id}/autoscaling`, owner)).status).toBe(204);
    const after = (await t.api.get(`/v1/services/${idle.id}`, owner)).body.serviceDetails;
    expect(after.autoscaling).toBeUndefined();
    expect(after.numInstances).toBe(1);
    expect((await eventsOf(idle.id, 'autoscaling_config_changed'))[0]).toEqual({
      fromConfig: autoscaling(1, 3, 60),
      toConfig: { ...autoscaling(1, 3, 60), enabled: false },
    });
  }, 120_000);

  it('refuses an autoscaling it cannot honour with 400, and another workspace with 404', async () => {
    const owner = await signUp(t.api);
    const web = await t.api.post(
      '/v1/services',
      { type: 'web_service', name: 'as', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const site = await t.api.post('/v1/services', { type: 'static_site', name: 'as-site' }, owner);
    const put = (id: string, body: unknown, as = owner) => t.api.put(`/v1/services/${id}/autoscaling`, body, as);
    const id = web.body.service.id;
    const off = { enabled: false, percentage: 0 };
    for (const body of [
      autoscaling(3, 2, 50),
      autoscaling(1, 21, 50),
      autoscaling(0, 2, 50),
      autoscaling(1, 2, 0),
      { ...autoscaling(1, 2, 50), criteria: { cpu: off, memory: off } },
      { enabled: true, min: 1, max: 2 },
    ])
      expect((await put(id, body)).status, JSON.stringify(body)).toBe(400);
    expect((await put(site.body.service.id, autoscaling(1, 2, 50))).status).toBe(400);
    expect((await put(id, autoscaling(1, 2, 50), await signUp(t.api))).status).toBe(404);
    expect((await t.api.get(`/v1/services/${id}`, owner)).body.serviceDetails.autoscaling).toBeUndefined();
  });
});
