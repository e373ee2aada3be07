import { describe, expect, it } from 'vitest';
import { addMember, signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();
const webService = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'web_service',
  name,
  serviceDetails: {
    runtime: 'node',
    plan: 'starter',
    healthCheckPath: '/healthz',
    envSpecificDetails: { buildCommand: '', startCommand: 'node server.js' },
  },
  ...extra,
});

describe('services', () => {
  it('creates, reads, lists with Render filters, updates and deletes a service', async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      webService('My App', { envVars: [{ key: 'GREETING', value: 'hi' }] }),
      owner,
    );
    expect(created.status).toBe(201);
    const service = created.body.service;
    expect(created.body.deployId).toBeUndefined(); // no repo, no upload yet: nothing to deploy
    expect(service).toMatchObject({
      id: expect.stringMatching(/^srv-[0-9a-v]{20}$/),
      name: 'My App',
      slug: 'my-app',
      ownerId: owner.workspaceId,
      type: 'web_service',
      autoDeploy: 'yes',
      suspended: 'not_suspended',
      suspenders: [],
      rootDir: '',
      serviceDetails: {
        runtime: 'node',
        plan: 'starter',
        numInstances: 1,
        healthCheckPath: '/healthz',
        envSpecificDetails: { startCommand: 'node server.js' },
      },
    });
    expect(service.serviceDetails.url).toBe(`http://my-app.localhost:${t.server.slipway.routerPort}`);

    // A second service with the same slug base gets a distinct slug; the same name in a workspace is a conflict.
    const other = await signUp(t.api);
    const twin = await t.api.post('/v1/services', webService('My App'), other);
    expect(twin.status).toBe(201);
    expect(twin.body.service.slug).toMatch(/^my-app-[0-9a-f]{4}$/);
    expect((await t.api.post('/v1/services', webService('My App'), owner)).status).toBe(409);

    await t.api.post(
      '/v1/services',
      { type: 'background_worker', name: 'jobs', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const list = await t.api.get('/v1/services?type=web_service', owner);
    expect(list.status).toBe(200);
    expect(list.body.map((i: any) => i.service.id)).toEqual([service.id]);
    expect((await t.api.get('/v1/services?name=jobs', owner)).body.map((i: any) => i.service.name)).toEqual(['jobs']);
    expect((await t.api.get('/v1/services?suspended=suspended', owner)).body).toEqual([]);
    const page = await t.api.get('/v1/services?limit=1', owner);
    expect(page.body).toHaveLength(1);
    const next = await t.api.get(`/v1/services?limit=1&cursor=${page.body[0].cursor}`, owner);
    expect(next.body.map((i: any) => i.service.id)).not.toContain(page.body[0].service.id);

    const patched = await t.api.patch(
      `/v1/services/${service.id}`,
      { name: 'Renamed', serviceDetails: { numInstances: 2 } },
      owner,
    );
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'Renamed',
      slug: 'my-app',
      serviceDetails: { numInstances: 2, healthCheckPath: '/healthz' },
    });

    expect((await t.api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
    expect((await t.api.get(`/v1/services/${service.id}`, owner)).status).toBe(404);
    expect((await t.api.delete(`/v1/services/${service.id}`, owner)).status).toBe(404);
  });

  it('refuses bad input with 4xx in the error shape', async () => {
    const owner = await signUp(t.api);
    const bad = async (body: unknown, status = 400) => {
      const res = await t.api.post('/v1/services', body, owner);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body).toMatchObject({ code: expect.any(String), message: expect.any(String), id: expect.any(String) });
      return res.body;
    };
    await bad({ type: 'spaceship', name: 'x' });
    await bad({ type: 'web_service', name: '' });
    await bad({ type: 'web_service', name: 'x'.repeat(101) });
    await bad({ type: 'web_service', name: 5 });
    await bad(
      webService('docker-out', {
        serviceDetails: { runtime: 'docker', envSpecificDetails: { dockerfilePath: '../x' } },
      }),
    );
    await bad(webService('image-none', { serviceDetails: { runtime: 'image' } }));
    await bad(
      webService('image-bad', { serviceDetails: { runtime: 'image' }, image: { imagePath: 'UPPER/Case:tag' } }),
    );
    await bad(webService('bad-plan', { serviceDetails: { runtime: 'node', plan: 'galactic' } }));
    await bad(webService('escape', { rootDir: '../other' }));
    await bad(webService('abs', { rootDir: '/etc' }));
    await bad(webService('opt', { repo: '--upload-pack=touch /tmp/x' }));
    await bad({ type: 'cron_job', name: 'cron', serviceDetails: { runtime: 'node', schedule: 'every minute' } });
    await bad(webService('health', { serviceDetails: { runtime: 'node', healthCheckPath: 'healthz' } }));
    const envErr = await bad(
      webService('env', {
        envVars: [
          { key: '1BAD', value: 'x' },
          { key: 'PORT', value: '1' },
        ],
      }),
    );
    expect(envErr.details.map((d: any) => d.field)).toEqual(['envVars[0].key', 'envVars[1].key']);
    // Nothing was created by the refused requests.
    expect((await t.api.get('/v1/services', owner)).body).toEqual([]);
    expect((await t.api.get('/v1/services/srv-00000000000000000000', owner)).status).toBe(404);
  });

  it('never drops a PATCH field silently: one it does not apply is a 400 naming it, and nothing changes', async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post('/v1/services', webService('patched'), owner);
    const id = created.body.service.id;
    const before = (await t.api.get(`/v1/services/${id}`, owner)).body;
    for (const [body, field] of [
      [{ serviceDetails: { maintenanceMode: { enabled: true, page: '' } } }, 'serviceDetails.maintenanceMode.page'],
      [{ serviceDetails: { autoscaling: { enabled: true, min: 1, max: 3 } } }, 'serviceDetails.autoscaling'],
      [
        { name: 'renamed', serviceDetails: { plan: 'starter', autoscaling: { enabled: true } } },
        'serviceDetails.autoscaling',
      ],
      [{ maintenanceMode: { enabled: true } }, 'maintenanceMode'],
    ] as const) {
      const res = await t.api.patch(`/v1/services/${id}`, body, owner);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.details.map((d: any) => d.field)).toContain(field);
    }
    expect((await t.api.get(`/v1/services/${id}`, owner)).body).toEqual(before);
    // A field it applies still works, and other PATCH routes are held to the same rule.
    expect((await t.api.patch(`/v1/services/${id}`, { name: 'renamed' }, owner)).body.name).toBe('renamed');
    const group = await t.api.post('/v1/env-groups', { name: 'g', envVars: [] }, owner);
    const groupPatch = await t.api.patch(`/v1/env-groups/${group.body.id}`, { name: 'g2', secretFiles: [] }, owner);
    expect(groupPatch.status).toBe(400);
    expect(groupPatch.body.details.map((d: any) => d.field)).toContain('secretFiles');
  });

  it('keeps every field of concurrent PATCHes (each merges into the details as they are then)', async () => {
    const owner = await signUp(t.api);
    const { service } = (await t.api.post('/v1/services', webService('patchy'), owner)).body;
    const patches = [
      { healthCheckPath: '/ready' },
      { preDeployCommand: 'echo pre' },
      { maxShutdownDelaySeconds: 7 },
      { plan: 'standard' },
      { envSpecificDetails: { buildCommand: 'echo build' } },
      { envSpecificDetails: { startCommand: 'node other.js' } },
    ];
    const replies = await Promise.all(
      patches.map((serviceDetails) => t.api.patch(`/v1/services/${service.id}`, { serviceDetails }, owner)),
    );
    expect(replies.map((r) => r.status)).toEqual(patches.map(() => 200));
    expect((await t.api.get(`/v1/services/${service.id}`, owner)).body.serviceDetails).toMatchObject({
      healthCheckPath: '/ready',
      maxShutdownDelaySeconds: 7,
      plan: 'standard',
      envSpecificDetails: { buildCommand: 'echo build', startCommand: 'node other.js', preDeployCommand: 'echo pre' },
    });
  });

  it('keeps env vars sealed at rest, replaces the set, and serves single keys', async () => {
    const owner = await signUp(t.api);
    const { service } = (
      await t.api.post(
        '/v1/services',
        webService('env-app', { envVars: [{ key: 'SECRET', value: 'hunter2-plaintext' }] }),
        owner,
      )
    ).body;
    const put = await t.api.put(
      `/v1/services/${service.id}/env-vars`,
      [
        { key: 'A', value: '1' },
        { key: 'TOKEN', generateValue: true },
      ],
      owner,
    );
    expect(put.status).toBe(200);
    expect(put.body.map((i: any) => i.envVar.key)).toEqual(['A', 'TOKEN']);
    const token = put.body[1].envVar.value;
    expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect((await t.api.get(`/v1/services/${service.id}/env-vars/SECRET`, owner)).status).toBe(404); // replaced away

    expect((await t.api.put(`/v1/services/${service.id}/env-vars/B`, { value: 'two' }, owner)).body).toEqual({
      key: 'B',
      value: 'two',
    });
    expect((await t.api.get(`/v1/services/${service.id}/env-vars/B`, owner)).body).toEqual({ key: 'B', value: 'two' });
    expect((await t.api.delete(`/v1/services/${service.id}/env-vars/A`, owner)).status).toBe(204);
    expect((await t.api.delete(`/v1/services/${service.id}/env-vars/A`, owner)).status).toBe(404);
    expect((await t.api.put(`/v1/services/${service.id}/env-vars/PORT`, { value: '1' }, owner)).status).toBe(400);
    expect((await t.api.put(`/v1/services/${service.id}/env-vars`, [{ key: 'X', value: 1 }], owner)).status).toBe(400);
    // A NUL would reach the app cut short (execve ends the value there): refused, nothing stored.
    const nul = await t.api.put(`/v1/services/${service.id}/env-vars/NUL`, { value: 'he\u0000llo' }, owner);
    expect([nul.status, nul.body.details]).toEqual([
      400,
      [{ field: 'value', message: expect.stringContaining('NUL') }],
    ]);
    // A key as long as the schema allows (256) is reachable by its path.
    const long = `K${'_'.repeat(255)}`;
    expect((await t.api.put(`/v1/services/${service.id}/env-vars/${long}`, { value: 'v' }, owner)).status).toBe(200);
    expect((await t.api.delete(`/v1/services/${service.id}/env-vars/${long}`, owner)).status).toBe(204);

    const { rows } = await t.server.slipway.store.executeSql(
      'select key, sealed_value from env_vars where service_id = $1 order by key',
      [service.id],
    );
    expect(rows.map((r: any) => r.key)).toEqual(['B', 'TOKEN']);
    for (const r of rows) {
      expect(r.sealed_value).toMatch(/^v1:/);
      expect(r.sealed_value).not.toContain('two');
      expect(r.sealed_value).not.toContain(token);
    }

    // Values are secrets: a viewer gets 403 on them.
    const viewer = await addMember(t.api, owner, 'viewer');
    expect((await t.api.get(`/v1/services/${service.id}/env-vars`, viewer)).status).toBe(403);
    expect((await t.api.get(`/v1/services/${service.id}`, viewer)).status).toBe(200);
  });

  it('lists the platform variables, with per-instance ones marked', async () => {
    const owner = await signUp(t.api);
    const { service } = (await t.api.post('/v1/services', webService('platform'), owner)).body;
    const res = await t.api.get(`/v1/services/${service.id}/platform-env`, owner);
    expect(res.status).toBe(200);
    const byKey = Object.fromEntries(res.body.map((v: any) => [v.key, v]));
    expect(byKey.PORT).toEqual({ key: 'PORT', value: null, perInstance: true });
    expect(byKey.SLIPWAY_INSTANCE_ID.perInstance).toBe(true);
    expect(byKey.SLIPWAY_SERVICE_ID.value).toBe(service.id);
    expect(byKey.SLIPWAY_EXTERNAL_HOSTNAME.value).toBe('platform.localhost');
    expect(byKey.SLIPWAY.value).toBe('true');
  });
});
