import { describe, expect, it } from 'vitest';
import { deployFixture, finished, viaRouter } from './helpers/apps.js';
import { addMember, signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();

describe('env groups', () => {
  it('creates, lists, renames, edits and deletes groups; values are sealed at rest', async () => {
    const owner = await signUp(t.api);
    const { service } = (
      await t.api.post(
        '/v1/services',
        { type: 'web_service', name: 'linked', serviceDetails: { runtime: 'node' } },
        owner,
      )
    ).body;
    const created = await t.api.post(
      '/v1/env-groups',
      {
        name: 'shared',
        envVars: [
          { key: 'A', value: 'alpha-plain' },
          { key: 'TOKEN', generateValue: true },
        ],
        serviceIds: [service.id],
      },
      owner,
    );
    expect(created.status).toBe(201);
    const group = created.body;
    expect(group).toMatchObject({
      id: expect.stringMatching(/^evg-/),
      name: 'shared',
      ownerId: owner.workspaceId,
      secretFiles: [],
      serviceLinks: [{ id: service.id, name: 'linked', type: 'web' }],
    });
    expect(group.envVars.map((v: any) => v.key)).toEqual(['A', 'TOKEN']);
    expect((await t.api.post('/v1/env-groups', { name: 'shared', envVars: [] }, owner)).status).toBe(409);
    expect(
      (await t.api.post('/v1/env-groups', { name: 'bad', envVars: [{ key: 'PORT', value: '1' }] }, owner)).status,
    ).toBe(400);

    const list = await t.api.get('/v1/env-groups', owner);
    expect(list.status).toBe(200);
    expect(list.body.map((g: any) => g.id)).toEqual([group.id]);
    expect(list.body[0].envVars).toBeUndefined(); // metadata only, as Render

    expect((await t.api.patch(`/v1/env-groups/${group.id}`, { name: 'renamed' }, owner)).body.name).toBe('renamed');
    const put = await t.api.put(`/v1/env-groups/${group.id}/env-vars/B`, { value: 'beta' }, owner);
    expect(put.body.envVars.map((v: any) => v.key)).toEqual(['A', 'B', 'TOKEN']);
    expect((await t.api.get(`/v1/env-groups/${group.id}/env-vars/B`, owner)).body).toEqual({ key: 'B', value: 'beta' });
    expect((await t.api.delete(`/v1/env-groups/${group.id}/env-vars/B`, owner)).status).toBe(204);
    const replaced = await t.api.put(`/v1/env-groups/${group.id}/env-vars`, [{ key: 'ONLY', value: 'one' }], owner);
    expect(replaced.body.envVars).toEqual([{ key: 'ONLY', value: 'one' }]);
    const { rows } = await t.server.slipway.store.executeSql(
      'select sealed_value from env_group_vars where group_id = $1',
      [group.id],
    );
    expect(rows.map((r: any) => r.sealed_value)).toEqual([expect.stringMatching(/^v1:/)]);
    expect(rows[0].sealed_value).not.toContain('one');

    // Another workspace's service cannot be linked; a viewer cannot read values.
    const other = await signUp(t.api);
    const foreign = (
      await t.api.post(
        '/v1/services',
        { type: 'web_service', name: 'theirs', serviceDetails: { runtime: 'node' } },
        other,
      )
    ).body.service;
    expect((await t.api.post(`/v1/env-groups/${group.id}/services/${foreign.id}`, undefined, owner)).status).toBe(404);
    expect((await t.api.get(`/v1/env-groups/${group.id}`, other)).status).toBe(404);
    const viewer = await addMember(t.api, owner, 'viewer');
    expect((await t.api.get(`/v1/env-groups/${group.id}`, viewer)).status).toBe(403);

    expect((await t.api.delete(`/v1/env-groups/${group.id}/services/${service.id}`, owner)).status).toBe(204);
    expect((await t.api.delete(`/v1/env-groups/${group.id}/services/${service.id}`, owner)).status).toBe(404);
    expect((await t.api.delete(`/v1/env-groups/${group.id}`, owner)).status).toBe(204);
    expect((await t.api.get(`/v1/env-groups/${group.id}`, owner)).status).toBe(404);
  });

  // Issue 29 (first round, still open): developers read env-group secret values in GET /v1/env-groups/:id, which the
  // resolved view masks for them.
  it("masks a group's values below admin on every read, as the resolved view does; developers still write them", async () => {
    const owner = await signUp(t.api);
    const developer = await addMember(t.api, owner, 'developer');
    const admin = await addMember(t.api, owner, 'admin');
    const made = await t.api.post(
      '/v1/env-groups',
      { name: 'prod-secrets', ownerId: owner.workspaceId, envVars: [{ key: 'DB_PASSWORD', value: 's3cret-value' }] },
      developer,
    );
    expect(made.status).toBe(201);
    expect(made.body.envVars).toEqual([{ key: 'DB_PASSWORD', value: '********' }]);
    const id = made.body.id;
    const valuesOf = (res: { body: any }) => JSON.stringify(res.body);

    const reads = [
      await t.api.get(`/v1/env-groups/${id}`, developer),
      await t.api.get(`/v1/env-groups/${id}/env-vars/DB_PASSWORD`, developer),
      await t.api.patch(`/v1/env-groups/${id}`, { name: 'prod-secrets-2' }, developer),
      await t.api.put(`/v1/env-groups/${id}/env-vars/API_TOKEN`, { value: 'tok-123456' }, developer),
    ];
    for (const res of reads) {
      expect(res.status).toBe(200);
      expect(valuesOf(res)).not.toMatch(/s3cret-value|tok-123456/);
      expect(valuesOf(res)).toContain('********');
    }
    expect(reads[0]!.body.envVars.map((v: any) => v.key)).toEqual(['DB_PASSWORD']);
    expect(reads[1]!.body).toEqual({ key: 'DB_PASSWORD', value: '********' });

    // Writing the mask back would replace every secret with it: refused.
    const back = await t.api.put(`/v1/env-groups/${id}/env-vars`, reads[3]!.body.envVars, developer);
    expect(back.status).toBe(400);
    expect(back.body).toMatchObject({
      code: 'validation_failed',
      details: [
        expect.objectContaining({ field: 'envVars[0].value' }),
        expect.objectContaining({ field: 'envVars[1].value' }),
      ],
    });

    // Admins and owners read the values.
    for (const who of [admin, owner]) {
      const full = await t.api.get(`/v1/env-groups/${id}`, who);
      expect(full.body.envVars).toEqual(
        expect.arrayContaining([
          { key: 'DB_PASSWORD', value: 's3cret-value' },
          { key: 'API_TOKEN', value: 'tok-123456' },
        ]),
      );
    }
  });

  it('resolves a service that never deployed with the same precedence: platform < groups in link order < its own', async () => {
    const owner = await signUp(t.api);
    const { service } = (
      await t.api.post(
        '/v1/services',
        {
          type: 'background_worker',
          name: 'resolved',
          autoDeploy: 'no',
          serviceDetails: { runtime: 'node' },
          envVars: [{ key: 'SHARED', value: 'service' }],
        },
        owner,
      )
    ).body;
    const group = async (name: string, vars: Array<{ key: string; value: string }>) =>
      (await t.api.post('/v1/env-groups', { name, envVars: vars, serviceIds: [service.id] }, owner)).body;
    const a = await group('a', [
      { key: 'SHARED', value: 'a' },
      { key: 'FROM_GROUPS', value: 'a' },
      { key: 'ONLY_A', value: 'a' },
    ]);
    const b = await group('b', [{ key: 'FROM_GROUPS', value: 'b' }]);
    const resolved = await t.api.get(`/v1/services/${service.id}/env-vars?resolved=true`, owner);
    expect(resolved.status).toBe(200);
    const keys = resolved.body.map((i: any) => i.envVar.key);
    expect(keys).toEqual([...keys].sort((x: string, y: string) => x.localeCompare(y)));
    const byKey = Object.fromEntries(
      resolved.body.map((i: any) => [i.envVar.key, { value: i.envVar.value, source: i.source }]),
    );
    expect(byKey).toMatchObject({
      SHARED: { value: 'service', source: 'service' },
      FROM_GROUPS: { value: 'b', source: `envGroup:${b.id}` },
      ONLY_A: { value: 'a', source: `envGroup:${a.id}` },
      SLIPWAY_SERVICE_TYPE: { value: 'background_worker', source: 'platform' },
    });
    expect(byKey.SLIPWAY_DEPLOY_ID).toBeUndefined(); // nothing live yet
    expect(byKey.PORT).toBeUndefined(); // per instance, and a worker does not listen
  });

  it('gives a running app platform < groups (in link order) < its own variables, and shows where each came from', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web', {
      envVars: [
        { key: 'SECRET_OWN', value: 'mine' },
        { key: 'GREETING_OVERRIDE', value: 'service wins' },
      ],
    });
    const first = (
      await t.api.post(
        '/v1/env-groups',
        {
          name: 'first',
          envVars: [
            { key: 'GREETING', value: 'from first' },
            { key: 'GREETING_OVERRIDE', value: 'group loses' },
            { key: 'SECRET_SHARED', value: 'one' },
          ],
        },
        owner,
      )
    ).body;
    const second = (
      await t.api.post('/v1/env-groups', { name: 'second', envVars: [{ key: 'SECRET_SHARED', value: 'two' }] }, owner)
    ).body;
    expect((await t.api.post(`/v1/env-groups/${first.id}/services/${service.id}`, undefined, owner)).status).toBe(200);
    expect((await t.api.post(`/v1/env-groups/${second.id}/services/${service.id}`, undefined, owner)).status).toBe(200);

    // Linking applies on the next deploy or restart.
    await t.api.post(`/v1/services/${service.id}/restart`, undefined, owner);
    const env = (await viaRouter(t.server.slipway.routerPort, service.slug)).json().env;
    expect(env).toMatchObject({
      GREETING: 'from first',
      GREETING_OVERRIDE: 'service wins',
      SECRET_SHARED: 'two',
      SECRET_OWN: 'mine',
      SLIPWAY_SERVICE_ID: service.id,
    });

    const resolved = await t.api.get(`/v1/services/${service.id}/env-vars?resolved=true`, owner);
    expect(resolved.status).toBe(200);
    const byKey = Object.fromEntries(
      resolved.body.map((i: any) => [i.envVar.key, { value: i.envVar.value, source: i.source }]),
    );
    expect(byKey.GREETING).toEqual({ value: 'from first', source: `envGroup:${first.id}` });
    expect(byKey.SECRET_SHARED).toEqual({ value: 'two', source: `envGroup:${second.id}` });
    expect(byKey.GREETING_OVERRIDE).toEqual({ value: 'service wins', source: 'service' });
    expect(byKey.SLIPWAY_SERVICE_ID).toEqual({ value: service.id, source: 'platform' });
    // One precedence for the view and the deploy (core/service-state/env.ts resolveEnv): the app got what the view shows.
    for (const [key, { value, source }] of Object.entries<{ value: string; source: string }>(byKey))
      if (source !== 'platform') expect({ key, value: env[key] }).toEqual({ key, value });

    // A developer sees where values come from, not the secret values themselves.
    const developer = await addMember(t.api, owner, 'developer');
    const masked = await t.api.get(`/v1/services/${service.id}/env-vars?resolved=true`, developer);
    const maskedByKey = Object.fromEntries(masked.body.map((i: any) => [i.envVar.key, i.envVar.value]));
    expect(maskedByKey.SECRET_SHARED).toBe('********');
    expect(maskedByKey.SLIPWAY_SERVICE_ID).toBe(service.id);

    // Unlinked, the group's variables are gone after the next deploy.
    await t.api.delete(`/v1/env-groups/${first.id}/services/${service.id}`, owner);
    const redeploy = await t.api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    expect((await finished(t.api, owner, service.id, redeploy.body.id)).status).toBe('live');
    const after = (await viaRouter(t.server.slipway.routerPort, service.slug)).json().env;
    expect(after.GREETING).toBeUndefined();
    expect(after.SECRET_SHARED).toBe('two');
  });
});
