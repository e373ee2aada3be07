/** Render's /v1/registrycredentials: CRUD, the token sealed and never shown, workspaces apart, and the in-use rule. */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createRegistryCredentials } from '../src/core/registry-credentials.js';
import { createSecretBox, loadSecretKey } from '../src/lib/secret-box.js';
import { createRepos } from '../src/store/repos/index.js';
import { addMember, signUp, type Reply, type TestUser } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();
const BASE = '/v1/registrycredentials';
/** A token no other text contains, so finding it anywhere is a leak. */
const secretToken = () => `ghp_${randomBytes(18).toString('hex')}`;
const expectError = (res: Reply, status: number, code: string) => {
  expect(res.status, res.text).toBe(status);
  expect(res.body).toMatchObject({ id: res.headers.get('request-id'), code, message: expect.any(String) });
};
const create = async (as: TestUser, body: Record<string, unknown> = {}) => {
  const res = await t.api.post(
    BASE,
    {
      registry: 'GITHUB',
      name: `cred-${randomBytes(3).toString('hex')}`,
      username: 'octocat',
      authToken: secretToken(),
      ...body,
    },
    as,
  );
  expect(res.status, res.text).toBe(200);
  return res.body as { id: string; name: string; registry: string; username: string; updatedAt: string };
};
/** The deploy engine's view of the server's store: the same repositories and secret key. */
const engineView = () =>
  createRegistryCredentials({
    repos: createRepos(t.server.slipway.store.db),
    box: createSecretBox(loadSecretKey(t.server.config.secretKey, t.server.dataDir)),
  });
/** Sets a service's details field (`docker` or `image`), as the container runtime's routes will. */
const useIn = (serviceId: string, field: 'docker' | 'image', value: Record<string, unknown> | null) =>
  t.server.slipway.store.executeSql(
    `update services set details = case when $2::jsonb is null then details - $1 else jsonb_set(details, array[$1], $2::jsonb) end where id = $3`,
    [field, value === null ? null : JSON.stringify(value), serviceId],
  );

describe('registry credentials', () => {
  it('creates, lists, retrieves, updates and deletes; the token is sealed and never shown', async () => {
    const owner = await signUp(t.api);
    const replies: Reply[] = [];
    const seen = <T extends Reply>(res: T) => (replies.push(res), res);
    const token = secretToken();
    const created = seen(
      await t.api.post(
        BASE,
        { registry: 'DOCKER', name: 'hub', username: 'me', authToken: token, ownerId: owner.workspaceId },
        owner,
      ),
    );
    expect(created.status, created.text).toBe(200); // Render answers a create with 200
    expect(created.body).toEqual({
      id: expect.stringMatching(/^rgc-[0-9a-v]{20}$/),
      name: 'hub',
      registry: 'DOCKER',
      username: 'me',
      updatedAt: expect.any(String),
    });
    const id = created.body.id;
    expectError(
      await t.api.post(BASE, { registry: 'GITLAB', name: 'hub', username: 'x', authToken: 'y' }, owner),
      409,
      'conflict',
    );

    const one = seen(await t.api.get(`${BASE}/${id}`, owner));
    expect(one.body).toEqual(created.body);
    const gitlab = await create(owner, { registry: 'GITLAB', username: 'gl-user' });
    const list = seen(await t.api.get(BASE, owner));
    expect(list.body.map((c: { id: string }) => c.id)).toEqual([gitlab.id, id]); // newest first, a bare array
    expect((await t.api.get(`${BASE}?type=GITLAB,AWS_ECR`, owner)).body).toEqual([gitlab]);
    expect((await t.api.get(`${BASE}?username=me`, owner)).body.map((c: { id: string }) => c.id)).toEqual([id]);
    expect((await t.api.get(`${BASE}?name=hub&name=nope`, owner)).body.map((c: { id: string }) => c.id)).toEqual([id]);
    expect((await t.api.get(`${BASE}?ownerId=${owner.workspaceId}&limit=1`, owner)).body).toEqual([gitlab]);
    const cursor = Buffer.from(gitlab.id).toString('base64url');
    expect((await t.api.get(`${BASE}?limit=1&cursor=${cursor}`, owner)).body.map((c: { id: string }) => c.id)).toEqual([
      id,
    ]);
    const later = new Date(Date.now() + 60_000).toISOString();
    expect((await t.api.get(`${BASE}?createdAfter=${later}`, owner)).body).toEqual([]);
    expectError(
      await t.api.get(`${BASE}?updatedAfter=${later}&updatedBefore=2000-01-01T00:00:00Z`, owner),
      400,
      'bad_request',
    );

    const newToken = secretToken();
    const patched = seen(
      await t.api.patch(
        `${BASE}/${id}`,
        { registry: 'GOOGLE_ARTIFACT', name: 'gar', username: '_json_key', authToken: newToken },
        owner,
      ),
    );
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ id, name: 'gar', registry: 'GOOGLE_ARTIFACT', username: '_json_key' });
    expect(Date.parse(patched.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.updatedAt));
    expectError(
      await t.api.patch(
        `${BASE}/${id}`,
        { registry: 'GITLAB', name: gitlab.name, username: 'x', authToken: 'y' },
        owner,
      ),
      409,
      'conflict',
    );

    // At rest: sealed with the secret box; the engine opens it, in its own workspace only.
    const { rows } = await t.server.slipway.store.executeSql('select * from registry_credentials where id = $1', [id]);
    expect(rows[0].sealed_token).toMatch(/^v1:/);
    expect(JSON.stringify(rows[0])).not.toContain(newToken);
    const engine = engineView();
    expect(await engine.credentialFor(owner.workspaceId, id)).toEqual({
      registry: 'GOOGLE_ARTIFACT',
      registryHost: '',
      username: '_json_key',
      authToken: newToken,
    });
    expect(await engine.credentialFor(owner.workspaceId, gitlab.id)).toMatchObject({
      registryHost: 'registry.gitlab.com',
      username: 'gl-user',
    });
    expect(await engine.credentialFor('tea-00000000000000000000', id)).toBeUndefined();
    expect(await engine.credentialFor(owner.workspaceId, 'rgc-00000000000000000000')).toBeUndefined();

    expect(seen(await t.api.delete(`${BASE}/${id}`, owner)).status).toBe(204);
    expectError(await t.api.get(`${BASE}/${id}`, owner), 404, 'not_found');
    expectError(await t.api.delete(`${BASE}/${id}`, owner), 404, 'not_found');

    // Neither token is in any answer, nor in the audit log (whose events name every change).
    const audit = await t.api.get('/v1/audit-logs?limit=100', owner);
    const events = audit.body.map((e: { auditLog: { event: string } }) => e.auditLog.event);
    expect(events).toEqual(
      expect.arrayContaining([
        'CreateRegistryCredentialEvent',
        'UpdateRegistryCredentialEvent',
        'DeleteRegistryCredentialEvent',
      ]),
    );
    for (const res of [...replies, audit]) {
      expect(res.text).not.toContain(token);
      expect(res.text).not.toContain(newToken);
      expect(res.text).not.toContain('authToken');
    }
  });

  it("keeps workspaces apart: another workspace's credential is a 404; viewers read, never write", async () => {
    const owner = await signUp(t.api);
    const other = await signUp(t.api);
    const cred = await create(owner);
    const body = { registry: 'GITHUB', name: 'mine', username: 'u', authToken: 't' };
    expectError(await t.api.get(`${BASE}/${cred.id}`, other), 404, 'not_found');
    expectError(await t.api.patch(`${BASE}/${cred.id}`, body, other), 404, 'not_found');
    expectError(await t.api.delete(`${BASE}/${cred.id}`, other), 404, 'not_found');
    expectError(await t.api.get(`${BASE}?ownerId=${owner.workspaceId}`, other), 404, 'not_found');
    expectError(await t.api.post(BASE, { ...body, ownerId: owner.workspaceId }, other), 404, 'not_found');
    expect((await t.api.get(BASE, other)).body).toEqual([]);
    expect((await t.api.get(`${BASE}/${cred.id}`, owner)).body).toEqual(cred); // untouched

    const viewer = await addMember(t.api, owner, 'viewer');
    expect((await t.api.get(`${BASE}/${cred.id}`, viewer)).status).toBe(200);
    expect((await t.api.get(`${BASE}?ownerId=${owner.workspaceId}`, viewer)).body).toEqual([cred]);
    expectError(await t.api.post(BASE, { ...body, ownerId: owner.workspaceId }, viewer), 403, 'forbidden');
    expectError(await t.api.delete(`${BASE}/${cred.id}`, viewer), 403, 'forbidden');
    const developer = await addMember(t.api, owner, 'developer');
    expect((await t.api.post(BASE, { ...body, ownerId: owner.workspaceId }, developer)).status).toBe(200);
  });

  it('refuses bad input with a 400 in the error shape, and nothing is stored', async () => {
    const owner = await signUp(t.api);
    const good = { registry: 'GITHUB', name: 'ok', username: 'u', authToken: 'tok' };
    const field = async (body: unknown, name: string, method = 'POST', url = BASE) => {
      const res = await t.api.call(method, url, { ...owner, body });
      expectError(res, 400, 'validation_failed');
      expect(res.body.details, res.text).toEqual(expect.arrayContaining([expect.objectContaining({ field: name })]));
    };
    await field({ ...good, registry: 'QUAY' }, 'registry');
    await field({ ...good, registry: 'github' }, 'registry');
    for (const missing of ['registry', 'name', 'username', 'authToken'] as const) {
      const { [missing]: _dropped, ...rest } = good;
      await field(rest, missing);
    }
    await field({ ...good, authToken: '' }, 'authToken');
    await field({ ...good, authToken: 7 }, 'authToken');
    await field({ ...good, name: 'two\r\nlines' }, 'name');
    await field({ ...good, name: 'n'.repeat(101) }, 'name');
    await field({ ...good, username: 'u'.repeat(256) }, 'username');
    const huge = 'x'.repeat(16 * 1024 + 1);
    await field({ ...good, authToken: huge }, 'authToken');
    // Past the route's body limit: refused before it is parsed.
    expectError(
      await t.api.post(BASE, { ...good, authToken: 'x'.repeat(100 * 1024) }, owner),
      413,
      'payload_too_large',
    );

    const cred = await create(owner);
    const url = `${BASE}/${cred.id}`;
    await field({ name: 'renamed' }, 'registry', 'PATCH', url); // Render's PATCH replaces every field
    await field({ ...good, ownerId: owner.workspaceId }, 'ownerId', 'PATCH', url); // a PATCH drops no field silently
    await field({ ...good, registry: 'AWS' }, 'registry', 'PATCH', url);
    expect((await t.api.get(BASE, owner)).body).toEqual([cred]);
  });

  it('refuses to delete a credential a service pulls or builds with (409), and deletes it once none does', async () => {
    const owner = await signUp(t.api);
    const other = await signUp(t.api);
    const [image, docker] = [await create(owner), await create(owner, { registry: 'DOCKER' })];
    const service = async (as: TestUser, name: string) => {
      const res = await t.api.post(
        '/v1/services',
        { type: 'web_service', name, autoDeploy: 'no', serviceDetails: { runtime: 'node' } },
        as,
      );
      expect(res.status, res.text).toBe(201);
      return res.body.service.id as string;
    };
    const puller = await service(owner, 'puller');
    const builder = await service(owner, 'builder');
    await useIn(puller, 'image', { imagePath: 'ghcr.io/acme/app:1', registryCredentialId: image.id });
    await useIn(builder, 'docker', {
      dockerfilePath: '',
      dockerContext: '',
      dockerCommand: '',
      registryCredentialId: docker.id,
    });
    // Another workspace's service naming the id does not hold it (it could never pull with it).
    const squatter = await service(other, 'squatter');
    await useIn(squatter, 'image', { imagePath: 'x/y', registryCredentialId: docker.id });

    // Service bodies name the credential (Render's registryCredential summary), a page's and a service's alike.
    const credentialOf = async (as: TestUser, id: string) =>
      (await t.api.get(`/v1/services/${id}`, as)).body.registryCredential;
    const listed = async () =>
      new Map<string, unknown>(
        (await t.api.get('/v1/services', owner)).body.map((e: any) => [e.service.id, e.service.registryCredential]),
      );
    expect(await credentialOf(owner, puller)).toEqual({ id: image.id, name: image.name });
    expect(await credentialOf(owner, builder)).toEqual({ id: docker.id, name: docker.name });
    expect(await listed()).toEqual(
      new Map([
        [puller, { id: image.id, name: image.name }],
        [builder, { id: docker.id, name: docker.name }],
      ]),
    );
    // Never another workspace's credential's name.
    expect(await credentialOf(other, squatter)).toEqual({ id: docker.id, name: docker.id });

    for (const [cred, user] of [
      [image, 'puller'],
      [docker, 'builder'],
    ] as const) {
      const refused = await t.api.delete(`${BASE}/${cred.id}`, owner);
      expectError(refused, 409, 'conflict');
      expect(refused.body.message).toContain(user);
      expect((await t.api.get(`${BASE}/${cred.id}`, owner)).status).toBe(200);
    }
    // Updating one in use is allowed: services take the new token on their next deploy.
    expect(
      (
        await t.api.patch(
          `${BASE}/${image.id}`,
          { registry: 'GITHUB', name: 'rotated', username: 'u', authToken: 'new' },
          owner,
        )
      ).status,
    ).toBe(200);
    // The rename shows at once, in the list too (its rows, which the read cache keeps, did not change).
    expect(await credentialOf(owner, puller)).toEqual({ id: image.id, name: 'rotated' });
    expect((await listed()).get(puller)).toEqual({ id: image.id, name: 'rotated' });

    await useIn(puller, 'image', { imagePath: 'ghcr.io/acme/app:1' });
    await useIn(builder, 'docker', null);
    expect((await t.api.delete(`${BASE}/${image.id}`, owner)).status).toBe(204);
    expect((await t.api.delete(`${BASE}/${docker.id}`, owner)).status).toBe(204);
  });
});
