import { describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { addMember, signUp, type TestUser } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();

const createService = async (user: TestUser, name: string, extra: Record<string, unknown> = {}) =>
  t.api.post('/v1/services', { type: 'web_service', name, serviceDetails: { runtime: 'node' }, ...extra }, user);
const createGroup = async (user: TestUser, name: string, extra: Record<string, unknown> = {}) =>
  t.api.post('/v1/env-groups', { name, envVars: [], ...extra }, user);
/** A project with one environment per name; returns the project body and its environment ids. */
async function project(user: TestUser, name: string, envs: string[] = ['production']) {
  const res = await t.api.post('/v1/projects', { name, environments: envs.map((n) => ({ name: n })) }, user);
  if (res.status !== 201) throw new Error(`project failed: ${res.status} ${res.text}`);
  return { project: res.body, envIds: res.body.environmentIds as string[] };
}
/** A datastore row as the datastores routes would write it (they own provisioning; this only needs the row). */
async function datastoreRow(workspaceId: string, id: string, kind: 'postgres' | 'keyValue') {
  await t.server.slipway.store.executeSql(
    `insert into datastores (id, workspace_id, kind, name, plan, version, provisioner, status, sealed_password)
     values ($1, $2, $3, $1, 'free', '16', 'local', 'available', '')`,
    [id, workspaceId, kind],
  );
}
const envOf = async (table: string, id: string) =>
  (await t.server.slipway.store.executeSql(`select environment_id from ${table} where id = $1`, [id])).rows[0]
    ?.environment_id ?? null;

describe('projects', () => {
  it("creates a project with its environments; lists with Render's envelope, cursor and filters; renames it", async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/projects',
      {
        name: 'shop',
        ownerId: owner.workspaceId,
        environments: [
          {
            name: 'production',
            protectedStatus: 'protected',
            ipAllowList: [{ cidrBlock: '203.0.113.0/24', description: 'office' }],
          },
          { name: 'staging' },
        ],
      },
      owner,
    );
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^prj-[0-9a-v]{20}$/),
      name: 'shop',
      owner: { id: owner.workspaceId, email: owner.email, type: 'team' },
      environmentIds: [expect.stringMatching(/^evm-/), expect.stringMatching(/^evm-/)],
    });
    const [prodId] = created.body.environmentIds;
    expect((await t.api.get(`/v1/environments/${prodId}`, owner)).body).toEqual({
      id: prodId,
      name: 'production',
      projectId: created.body.id,
      databasesIds: [],
      redisIds: [],
      serviceIds: [],
      envGroupIds: [],
      protectedStatus: 'protected',
      networkIsolationEnabled: false,
      ipAllowList: [{ cidrBlock: '203.0.113.0/24', description: 'office' }],
    });

    // Environments are created with the project or not at all.
    const dup = await t.api.post('/v1/projects', { name: 'dup', environments: [{ name: 'a' }, { name: 'a' }] }, owner);
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('conflict');
    const bad = await t.api.post(
      '/v1/projects',
      { name: 'badcidr', environments: [{ name: 'a', ipAllowList: [{ cidrBlock: '10.0.0.0/33', description: '' }] }] },
      owner,
    );
    expect(bad.status).toBe(400);

    await project(owner, 'second', []);
    await project(owner, 'third');
    const all = await t.api.get('/v1/projects', owner);
    expect(all.body.map((i: any) => i.project.name)).toEqual(['third', 'second', 'shop']);
    for (const item of all.body) expect(Object.keys(item).sort()).toEqual(['cursor', 'project']);
    const first = await t.api.get('/v1/projects?limit=2', owner);
    expect(first.body.map((i: any) => i.project.name)).toEqual(['third', 'second']);
    const next = await t.api.get(`/v1/projects?limit=2&cursor=${first.body[1].cursor}`, owner);
    expect(next.body.map((i: any) => i.project.name)).toEqual(['shop']);
    expect((await t.api.get('/v1/projects?name=shop&name=second', owner)).body.map((i: any) => i.project.name)).toEqual(
      ['second', 'shop'],
    );
    expect(
      (await t.api.get(`/v1/projects?createdAfter=${new Date(Date.now() + 60_000).toISOString()}`, owner)).body,
    ).toEqual([]);
    expect((await t.api.get('/v1/projects?cursor=nonsense', owner)).status).toBe(400);

    const renamed = await t.api.patch(`/v1/projects/${created.body.id}`, { name: 'storefront' }, owner);
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'storefront', environmentIds: created.body.environmentIds });
    expect(renamed.body.updatedAt > created.body.updatedAt).toBe(true);
    expect((await t.api.get(`/v1/projects/${created.body.id}`, owner)).body.name).toBe('storefront');
    expect((await t.api.patch(`/v1/projects/${created.body.id}`, { name: '' }, owner)).status).toBe(400);

    // Another workspace sees none of it.
    const other = await signUp(t.api);
    expect((await t.api.get('/v1/projects', other)).body).toEqual([]);
    expect((await t.api.get(`/v1/projects?ownerId=${owner.workspaceId}`, other)).status).toBe(404);
    expect((await t.api.get(`/v1/projects/${created.body.id}`, other)).status).toBe(404);
    expect((await t.api.patch(`/v1/projects/${created.body.id}`, { name: 'mine' }, other)).status).toBe(404);
    expect(
      (await t.api.post('/v1/projects', { name: 'x', ownerId: owner.workspaceId, environments: [] }, other)).status,
    ).toBe(404);
  });

  it('creates, lists, updates and deletes environments', async () => {
    const owner = await signUp(t.api);
    const { project: p, envIds } = await project(owner, 'app');
    const created = await t.api.post(
      '/v1/environments',
      { name: 'staging', projectId: p.id, networkIsolationEnabled: true },
      owner,
    );
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^evm-/),
      name: 'staging',
      projectId: p.id,
      protectedStatus: 'unprotected',
      networkIsolationEnabled: true,
      serviceIds: [],
    });
    expect((await t.api.post('/v1/environments', { name: 'staging', projectId: p.id }, owner)).status).toBe(409);
    expect((await t.api.get(`/v1/projects/${p.id}`, owner)).body.environmentIds).toEqual([envIds[0], created.body.id]);

    const list = await t.api.get(`/v1/environments?projectId=${p.id}`, owner);
    expect(list.status).toBe(200);
    expect(list.body.map((i: any) => i.environment.name)).toEqual(['staging', 'production']);
    for (const item of list.body) expect(Object.keys(item).sort()).toEqual(['cursor', 'environment']);
    expect(
      (await t.api.get(`/v1/environments?projectId=${p.id}&limit=1&cursor=${list.body[0].cursor}`, owner)).body.map(
        (i: any) => i.environment.name,
      ),
    ).toEqual(['production']);
    expect((await t.api.get(`/v1/environments?projectId=${p.id}&name=production`, owner)).body).toHaveLength(1);
    expect(
      (await t.api.get(`/v1/environments?projectId=${p.id}&environmentId=${created.body.id}`, owner)).body,
    ).toHaveLength(1);
    const missing = await t.api.get('/v1/environments', owner);
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ code: 'validation_failed', details: [{ field: 'projectId' }] });
    expect((await t.api.get('/v1/environments?projectId=prj-00000000000000000000', owner)).status).toBe(404);

    const patched = await t.api.patch(
      `/v1/environments/${created.body.id}`,
      { name: 'qa', ipAllowList: [{ cidrBlock: '2001:db8::/32', description: 'v6' }] },
      owner,
    );
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'qa',
      networkIsolationEnabled: true,
      ipAllowList: [{ cidrBlock: '2001:db8::/32', description: 'v6' }],
    });
    expect((await t.api.patch(`/v1/environments/${created.body.id}`, { name: 'production' }, owner)).status).toBe(409);
    expect(
      (
        await t.api.patch(
          `/v1/environments/${created.body.id}`,
          { ipAllowList: [{ cidrBlock: 'not-an-ip', description: '' }] },
          owner,
        )
      ).status,
    ).toBe(400);
    expect(
      (await t.api.patch(`/v1/environments/${created.body.id}`, { protectedStatus: 'locked' }, owner)).status,
    ).toBe(400);

    // Protection: only admins change it, and only admins delete a protected environment.
    const developer = await addMember(t.api, owner, 'developer');
    const admin = await addMember(t.api, owner, 'admin');
    const viewer = await addMember(t.api, owner, 'viewer');
    expect(
      (await t.api.patch(`/v1/environments/${created.body.id}`, { protectedStatus: 'protected' }, developer)).status,
    ).toBe(403);
    expect(
      (await t.api.patch(`/v1/environments/${created.body.id}`, { protectedStatus: 'protected' }, admin)).body
        .protectedStatus,
    ).toBe('protected');
    expect((await t.api.patch(`/v1/environments/${created.body.id}`, { name: 'qa2' }, developer)).status).toBe(200);
    expect((await t.api.delete(`/v1/environments/${created.body.id}`, developer)).status).toBe(403);
    expect((await t.api.get(`/v1/environments/${created.body.id}`, viewer)).status).toBe(200);
    expect((await t.api.post('/v1/environments', { name: 'v', projectId: p.id }, viewer)).status).toBe(403);
    expect((await t.api.delete(`/v1/environments/${created.body.id}`, admin)).status).toBe(204);
    expect((await t.api.get(`/v1/environments/${created.body.id}`, owner)).status).toBe(404);
    expect((await t.api.get(`/v1/projects/${p.id}`, owner)).body.environmentIds).toEqual([envIds[0]]);
  });
});

describe('environment resources', () => {
  it('moves services, env groups and datastores in and out; the lists filter by environment', async () => {
    const owner = await signUp(t.api);
    const {
      envIds: [prod, staging],
    } = await project(owner, 'moves', ['production', 'staging']);
    const service = (await createService(owner, 'api')).body.service;
    const group = (await createGroup(owner, 'shared')).body;
    const pg = newId('postgres');
    const kv = newId('keyValue');
    await datastoreRow(owner.workspaceId, pg, 'postgres');
    await datastoreRow(owner.workspaceId, kv, 'keyValue');

    const added = await t.api.post(
      `/v1/environments/${prod}/resources`,
      { resourceIds: [service.id, group.id, pg, kv, service.id] },
      owner,
    );
    expect(added.status, added.text).toBe(200);
    expect(added.body).toMatchObject({
      id: prod,
      serviceIds: [service.id],
      envGroupIds: [group.id],
      databasesIds: [pg],
      redisIds: [kv],
    });
    expect((await t.api.get(`/v1/services?environmentId=${prod}`, owner)).body.map((i: any) => i.service.id)).toEqual([
      service.id,
    ]);
    expect((await t.api.get(`/v1/services/${service.id}`, owner)).body.environmentId).toBe(prod);
    expect((await t.api.get(`/v1/env-groups?environmentId=${prod}`, owner)).body.map((g: any) => g.id)).toEqual([
      group.id,
    ]);
    expect((await t.api.get(`/v1/env-groups/${group.id}`, owner)).body.environmentId).toBe(prod);

    // Adding to another environment moves it; removing from an environment it is not in leaves it.
    expect(
      (await t.api.post(`/v1/environments/${staging}/resources`, { resourceIds: [service.id] }, owner)).body.serviceIds,
    ).toEqual([service.id]);
    expect((await t.api.get(`/v1/environments/${prod}`, owner)).body.serviceIds).toEqual([]);
    expect((await t.api.delete(`/v1/environments/${prod}/resources?resourceIds=${service.id}`, owner)).status).toBe(
      204,
    );
    expect(await envOf('services', service.id)).toBe(staging);

    // Render's comma-separated list and repeated keys both work.
    expect(
      (await t.api.delete(`/v1/environments/${prod}/resources?resourceIds=${group.id},${pg}&resourceIds=${kv}`, owner))
        .status,
    ).toBe(204);
    expect((await t.api.delete(`/v1/environments/${staging}/resources?resourceIds=${service.id}`, owner)).status).toBe(
      204,
    );
    for (const env of [prod, staging]) {
      expect((await t.api.get(`/v1/environments/${env}`, owner)).body).toMatchObject({
        serviceIds: [],
        envGroupIds: [],
        databasesIds: [],
        redisIds: [],
      });
    }
    expect((await t.api.get(`/v1/services?environmentId=${staging}`, owner)).body).toEqual([]);
    expect((await t.api.get(`/v1/env-groups?environmentId=${prod}`, owner)).body).toEqual([]);
  });

  it("is all or nothing: unknown, malformed or another workspace's ids change nothing", async () => {
    const owner = await signUp(t.api);
    const other = await signUp(t.api);
    const {
      envIds: [env],
    } = await project(owner, 'guarded');
    const {
      envIds: [theirEnv],
    } = await project(other, 'theirs');
    const mine = (await createService(owner, 'mine')).body.service;
    const theirs = (await createService(other, 'theirs')).body.service;
    const theirGroup = (await createGroup(other, 'their-group')).body;

    const cases: Array<[unknown, number, string]> = [
      [[mine.id, theirs.id], 404, 'not_found'],
      [[mine.id, theirGroup.id], 404, 'not_found'],
      [[mine.id, 'srv-00000000000000000000'], 404, 'not_found'],
      [[mine.id, 'dpg-00000000000000000000'], 404, 'not_found'],
      [[mine.id, 'usr-00000000000000000000'], 400, 'bad_request'],
      [[mine.id, 'nonsense'], 400, 'bad_request'],
      [[], 400, 'validation_failed'],
      [[mine.id, 5], 400, 'validation_failed'],
      ['srv', 400, 'validation_failed'],
    ];
    for (const [resourceIds, status, code] of cases) {
      const res = await t.api.post(`/v1/environments/${env}/resources`, { resourceIds }, owner);
      expect(res.status, JSON.stringify(resourceIds)).toBe(status);
      expect(res.body).toMatchObject({ code, id: res.headers.get('request-id'), message: expect.any(String) });
      expect(await envOf('services', mine.id)).toBeNull();
    }
    // A key-value id used as a Postgres id is not found either.
    const kv = newId('keyValue');
    await datastoreRow(owner.workspaceId, kv, 'keyValue');
    expect(
      (await t.api.post(`/v1/environments/${env}/resources`, { resourceIds: [`dpg-${kv.slice(4)}`] }, owner)).status,
    ).toBe(404);
    expect((await t.api.delete(`/v1/environments/${env}/resources?resourceIds=${theirs.id}`, owner)).status).toBe(404);
    expect((await t.api.delete(`/v1/environments/${env}/resources`, owner)).status).toBe(400);

    // Another workspace's environment answers 404 everywhere, and its resources stay put.
    expect((await t.api.post(`/v1/environments/${theirEnv}/resources`, { resourceIds: [mine.id] }, owner)).status).toBe(
      404,
    );
    expect((await t.api.get(`/v1/environments/${theirEnv}`, owner)).status).toBe(404);
    expect((await t.api.patch(`/v1/environments/${theirEnv}`, { name: 'x' }, owner)).status).toBe(404);
    expect((await t.api.delete(`/v1/environments/${theirEnv}`, owner)).status).toBe(404);
    expect(
      (
        await t.api.get(
          `/v1/environments?projectId=${(await t.api.get(`/v1/environments/${theirEnv}`, other)).body.projectId}`,
          owner,
        )
      ).status,
    ).toBe(404);
    expect(await envOf('services', theirs.id)).toBeNull();

    // Malformed bodies are 4xx in the documented shape, never 500.
    const raw = await t.api.call('POST', `/v1/environments/${env}/resources`, {
      ...owner,
      raw: '{"resourceIds": [',
      headers: { 'content-type': 'application/json' },
    });
    expect(raw.status).toBe(400);
    expect(raw.body).toMatchObject({ code: expect.any(String), id: raw.headers.get('request-id') });
    expect((await t.api.post('/v1/projects', { name: 5, environments: [] }, owner)).body.code).toBe(
      'validation_failed',
    );
    expect((await t.api.post('/v1/projects', { name: 'no-envs' }, owner)).status).toBe(400);
    expect(
      (await t.api.post('/v1/environments', { name: 'x', projectId: 'prj-00000000000000000000' }, owner)).status,
    ).toBe(404);
  });

  it('refuses to delete a non-empty environment or project (409), as Render; empty ones go with their environments', async () => {
    const owner = await signUp(t.api);
    const {
      project: p,
      envIds: [prod, staging],
    } = await project(owner, 'keep', ['production', 'staging']);
    const service = (await createService(owner, 'held')).body.service;
    expect(
      (await t.api.post(`/v1/environments/${staging}/resources`, { resourceIds: [service.id] }, owner)).status,
    ).toBe(200);

    const envDelete = await t.api.delete(`/v1/environments/${staging}`, owner);
    expect(envDelete.status).toBe(409);
    expect(envDelete.body.code).toBe('conflict');
    expect((await t.api.delete(`/v1/projects/${p.id}`, owner)).status).toBe(409);
    expect((await t.api.get(`/v1/environments/${staging}`, owner)).body.serviceIds).toEqual([service.id]);

    // Deleting the resource itself empties the environment.
    expect((await t.api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
    expect((await t.api.delete(`/v1/environments/${staging}`, owner)).status).toBe(204);

    // A protected environment makes its project an admin's to delete.
    const developer = await addMember(t.api, owner, 'developer');
    await t.api.patch(`/v1/environments/${prod}`, { protectedStatus: 'protected' }, owner);
    expect((await t.api.delete(`/v1/projects/${p.id}`, developer)).status).toBe(403);
    expect((await t.api.delete(`/v1/projects/${p.id}`, owner)).status).toBe(204);
    expect((await t.api.get(`/v1/projects/${p.id}`, owner)).status).toBe(404);
    expect((await t.api.get(`/v1/environments/${prod}`, owner)).status).toBe(404);
    const { rows } = await t.server.slipway.store.executeSql(
      'select count(*)::int as n from environments where project_id = $1',
      [p.id],
    );
    expect(rows[0].n).toBe(0);
  });

  it('leaves taking resources out of a protected environment to admins', async () => {
    const owner = await signUp(t.api);
    const [developer, admin] = [await addMember(t.api, owner, 'developer'), await addMember(t.api, owner, 'admin')];
    const {
      envIds: [prod, staging],
    } = await project(owner, 'guarded', ['production', 'staging']);
    const service = (await createService(owner, 'precious')).body.service;
    expect((await t.api.patch(`/v1/environments/${prod}`, { protectedStatus: 'protected' }, owner)).status).toBe(200);
    expect(
      (await t.api.post(`/v1/environments/${prod}/resources`, { resourceIds: [service.id] }, developer)).status,
    ).toBe(200); // adding is not destructive
    expect((await t.api.delete(`/v1/environments/${prod}/resources?resourceIds=${service.id}`, developer)).status).toBe(
      403,
    );
    expect(
      (await t.api.post(`/v1/environments/${staging}/resources`, { resourceIds: [service.id] }, developer)).status,
    ).toBe(403);
    expect(await envOf('services', service.id)).toBe(prod);
    // Taking it out of an environment it is not in is a no-op, not a protected action.
    expect(
      (await t.api.delete(`/v1/environments/${staging}/resources?resourceIds=${service.id}`, developer)).status,
    ).toBe(204);
    expect(
      (await t.api.post(`/v1/environments/${staging}/resources`, { resourceIds: [service.id] }, admin)).status,
    ).toBe(200);
    expect(await envOf('services', service.id)).toBe(staging);
  });

  it('checks environmentId when a service or env group is created into one', async () => {
    const owner = await signUp(t.api);
    const other = await signUp(t.api);
    const {
      envIds: [env],
    } = await project(owner, 'targets');
    const {
      envIds: [theirEnv],
    } = await project(other, 'foreign');

    for (const environmentId of ['evm-00000000000000000000', theirEnv!, 'garbage']) {
      const svc = await createService(owner, `svc-${environmentId.slice(-4)}`, { environmentId });
      expect(svc.status, svc.text).toBe(404);
      const grp = await createGroup(owner, `grp-${environmentId.slice(-4)}`, { environmentId });
      expect(grp.status, grp.text).toBe(404);
    }
    expect((await t.api.get('/v1/services', owner)).body).toEqual([]);
    expect((await t.api.get('/v1/env-groups', owner)).body).toEqual([]);

    const svc = await createService(owner, 'placed', { environmentId: env });
    expect(svc.status, svc.text).toBe(201);
    expect(svc.body.service.environmentId).toBe(env);
    const grp = await createGroup(owner, 'placed', { environmentId: env });
    expect(grp.status, grp.text).toBe(201);
    expect((await t.api.get(`/v1/environments/${env}`, owner)).body).toMatchObject({
      serviceIds: [svc.body.service.id],
      envGroupIds: [grp.body.id],
    });
  });
});
