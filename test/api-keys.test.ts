import { describe, expect, it } from 'vitest';
import { useServer } from './helpers/server.js';
import { addMember, createApiKey, signUp } from './helpers/client.js';

const OPERATOR_TOKEN = 'operator-test-token-0123456789abcdef';
const t = useServer({ SLIPWAY_OPERATOR_TOKEN: OPERATOR_TOKEN });

describe('API keys', () => {
  it('shows the token once, lists metadata only, and the token works as a Bearer on every route', async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post('/v1/api-keys', { name: 'ci deploys' }, owner);
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^slw_[A-Za-z0-9_-]{43}$/);
    expect(created.body).toMatchObject({
      name: 'ci deploys',
      ownerId: owner.workspaceId,
      userId: owner.id,
      expiresAt: null,
    });
    expect(created.body.token.startsWith(created.body.prefix)).toBe(true);

    const list = await t.api.get('/v1/api-keys', owner);
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(1);
    expect(list.body[0].apiKey.id).toBe(created.body.id);
    expect(list.text).not.toContain(created.body.token);
    expect(list.body[0].apiKey).not.toHaveProperty('token');

    const me = await t.api.get('/v1/users', { token: created.body.token });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(owner.id);
    const keysViaKey = await t.api.get('/v1/api-keys', { token: created.body.token });
    expect(keysViaKey.status).toBe(200);
    expect(keysViaKey.body[0].apiKey.lastUsedAt).not.toBeNull();
  });

  it('a revoked key answers 401 at once; revoking twice is 404', async () => {
    const owner = await signUp(t.api);
    const key = await createApiKey(t.api, owner);
    expect((await t.api.delete(`/v1/api-keys/${key.id}`, owner)).status).toBe(204);
    const after = await t.api.get('/v1/users', { token: key.token });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('unauthorized');
    expect((await t.api.delete(`/v1/api-keys/${key.id}`, owner)).status).toBe(404);
  });

  it('an expired key answers 401; an expiry in the past is refused', async () => {
    const owner = await signUp(t.api);
    const soon = new Date(Date.now() + 1500).toISOString();
    const key = await t.api.post('/v1/api-keys', { name: 'short-lived', expiresAt: soon }, owner);
    expect(key.status).toBe(201);
    expect((await t.api.get('/v1/users', { token: key.body.token })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1700));
    expect((await t.api.get('/v1/users', { token: key.body.token })).status).toBe(401);
    const past = await t.api.post('/v1/api-keys', { name: 'past', expiresAt: '2001-01-01T00:00:00Z' }, owner);
    expect(past.status).toBe(400);
  });

  it('malformed Authorization headers answer 401, never 500', async () => {
    for (const authorization of [
      'Bearer',
      'Bearer ',
      'Basic abc',
      'Bearer slw_nope',
      `Bearer ${'x'.repeat(600)}`,
      'Bearer a b',
    ]) {
      const res = await t.api.get('/v1/users', { headers: { authorization } });
      expect(res.status, authorization).toBe(401);
      expect(res.body.code).toBe('unauthorized');
    }
  });

  it('only owners and admins manage keys; developers and viewers get 403', async () => {
    const owner = await signUp(t.api);
    const key = await createApiKey(t.api, owner);
    for (const role of ['developer', 'viewer'] as const) {
      const member = await addMember(t.api, owner, role);
      const create = await t.api.post('/v1/api-keys', { name: 'x', ownerId: owner.workspaceId }, member);
      expect(create.status, role).toBe(403);
      expect(create.body.code).toBe('forbidden');
      expect((await t.api.delete(`/v1/api-keys/${key.id}`, member)).status, role).toBe(403);
    }
    const admin = await addMember(t.api, owner, 'admin');
    expect((await t.api.post('/v1/api-keys', { name: 'by admin', ownerId: owner.workspaceId }, admin)).status).toBe(
      201,
    );
  });

  // Issue 29 (first round, still open): an admin could delete the owner's API key.
  it("an admin cannot revoke a key of a member ranked above them; owners and the key's own user can", async () => {
    const owner = await signUp(t.api);
    const ownerKey = await createApiKey(t.api, owner);
    const admin = await addMember(t.api, owner, 'admin');
    const other = await addMember(t.api, owner, 'admin');
    const dev = await addMember(t.api, owner, 'developer');
    const inOwner = (name: string, by: typeof admin) =>
      t.api.post('/v1/api-keys', { name, ownerId: owner.workspaceId }, by).then((r) => r.body);
    const othersKey = await inOwner('other admin', other);
    const adminsKey = await inOwner('admin', admin);

    const refused = await t.api.delete(`/v1/api-keys/${ownerKey.id}`, admin);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/owner/) });
    // Not through an API key of the admin's either.
    expect((await t.api.delete(`/v1/api-keys/${ownerKey.id}`, { token: adminsKey.token })).status).toBe(403);
    expect((await t.api.get('/v1/users', { token: ownerKey.token })).status).toBe(200);

    // An admin revokes an admin's key (the same rank) and their own; an owner any; the developer none.
    expect((await t.api.delete(`/v1/api-keys/${othersKey.id}`, dev)).status).toBe(403);
    expect((await t.api.delete(`/v1/api-keys/${othersKey.id}`, admin)).status).toBe(204);
    expect((await t.api.delete(`/v1/api-keys/${adminsKey.id}`, admin)).status).toBe(204);
    const again = await inOwner('admin again', admin);
    expect((await t.api.delete(`/v1/api-keys/${again.id}`, owner)).status).toBe(204);
    expect((await t.api.delete(`/v1/api-keys/${ownerKey.id}`, owner)).status).toBe(204);
    // A key whose user was promoted above the admin is out of the admin's reach too.
    const promoted = await inOwner('to be owner', other);
    expect((await t.api.patch(`/v1/team-members/${other.id}`, { role: 'owner' }, owner)).status).toBe(200);
    expect((await t.api.delete(`/v1/api-keys/${promoted.id}`, admin)).status).toBe(403);
    expect((await t.api.delete(`/v1/api-keys/${promoted.id}`, { token: OPERATOR_TOKEN })).status).toBe(204);
  });

  it("another workspace's key answers 404", async () => {
    const a = await signUp(t.api);
    const b = await signUp(t.api);
    const key = await createApiKey(t.api, a);
    expect((await t.api.delete(`/v1/api-keys/${key.id}`, b)).status).toBe(404);
    expect((await t.api.get('/v1/users', { token: key.token })).status).toBe(200);
  });

  it("a key acts only in its own workspace, with its user's current role", async () => {
    const owner = await signUp(t.api);
    const admin = await addMember(t.api, owner, 'admin');
    // The admin's key lives in the admin's default workspace, not the owner's.
    const adminKey = await createApiKey(t.api, admin);
    expect((await t.api.get(`/v1/team-members?ownerId=${owner.workspaceId}`, { token: adminKey.token })).status).toBe(
      404,
    );
    // A key created in the owner's workspace loses its power when its user is demoted.
    const inOwner = await t.api.post('/v1/api-keys', { name: 'admin in owner ws', ownerId: owner.workspaceId }, admin);
    expect(inOwner.status).toBe(201);
    expect((await t.api.post('/v1/api-keys', { name: 'via key' }, { token: inOwner.body.token })).status).toBe(201);
    expect((await t.api.patch(`/v1/team-members/${admin.id}`, { role: 'viewer' }, owner)).status).toBe(200);
    expect((await t.api.post('/v1/api-keys', { name: 'via key' }, { token: inOwner.body.token })).status).toBe(403);
  });
});

describe('operator token', () => {
  it('reads every workspace; a wrong operator token is 401', async () => {
    const a = await signUp(t.api);
    const b = await signUp(t.api);
    const op = { token: OPERATOR_TOKEN };
    const list = await t.api.get('/v1/workspaces?limit=100', op);
    expect(list.status).toBe(200);
    const ids = list.body.map((e: { owner: { id: string } }) => e.owner.id);
    expect(ids).toEqual(expect.arrayContaining([a.workspaceId, b.workspaceId]));
    expect((await t.api.get(`/v1/team-members?ownerId=${b.workspaceId}`, op)).status).toBe(200);
    expect((await t.api.get('/v1/team-members', op)).status).toBe(400); // must name a workspace
    expect((await t.api.get('/v1/users', { token: OPERATOR_TOKEN + 'x' })).status).toBe(401);
  });
});
