/**
 * One process with its principal cache on (src/core/principal-cache.ts): whatever was cached,
 * a revocation, sign-out or membership change holds from the very next request, and an API key's
 * lastUsedAt still advances (once per SLIPWAY_API_KEY_TOUCH_SECONDS, 2 s here) while it is served
 * from the cache. On PGlite or Postgres, whichever the suite runs on.
 */
import { describe, expect, it } from 'vitest';
import { addMember, createApiKey, signUp, uniqueEmail, type Caller } from './helpers/client.js';
import { sleep } from './helpers/process.js';
import { useServer } from './helpers/server.js';

const t = useServer({ SLIPWAY_PRINCIPAL_CACHE_SECONDS: '60', SLIPWAY_API_KEY_TOUCH_SECONDS: '2' });

async function lastUsedAt(owner: Caller, keyId: string): Promise<number> {
  const keys = await t.api.get('/v1/api-keys', owner);
  const key = keys.body.find((e: { apiKey: { id: string } }) => e.apiKey.id === keyId).apiKey;
  return new Date(key.lastUsedAt).getTime();
}

describe('principal cache in one process', () => {
  it('a cached API key is refused on the next request after its revocation', async () => {
    const owner = await signUp(t.api);
    const key = await createApiKey(t.api, owner);
    expect((await t.api.get('/v1/users', { token: key.token })).status).toBe(200);
    expect((await t.api.get('/v1/api-keys', { token: key.token })).status).toBe(200);
    expect((await t.api.delete(`/v1/api-keys/${key.id}`, owner)).status).toBe(204);
    expect((await t.api.get('/v1/users', { token: key.token })).status).toBe(401);
  });

  it('a cached session is refused on the next request after signing out', async () => {
    const user = await signUp(t.api);
    expect((await t.api.get('/v1/users', user)).status).toBe(200);
    expect((await t.api.get('/v1/users', user)).status).toBe(200);
    expect((await t.api.post('/v1/auth/logout', undefined, user)).status).toBe(204);
    expect((await t.api.get('/v1/users', user)).status).toBe(401);
  });

  it('a cached role changes, goes and comes on the next request', async () => {
    const owner = await signUp(t.api);
    const dev = await addMember(t.api, owner, 'developer');
    const member = `/v1/team-members/${dev.id}?ownerId=${owner.workspaceId}`;
    let n = 0;
    const createGroup = () =>
      t.api.post('/v1/env-groups', { name: `group-${n++}`, envVars: [], ownerId: owner.workspaceId }, dev);
    expect((await createGroup()).status).toBe(201);
    expect((await t.api.patch(member, { role: 'viewer' }, owner)).status).toBe(200);
    expect((await createGroup()).status).toBe(403);
    expect((await t.api.patch(member, { role: 'developer' }, owner)).status).toBe(200);
    expect((await createGroup()).status).toBe(201);
    expect((await t.api.delete(member, owner)).status).toBe(204);
    expect((await t.api.get(`/v1/env-groups?ownerId=${owner.workspaceId}`, dev)).status).toBe(404);
  });

  it('an accepted invite opens a workspace that was cached as not a member', async () => {
    const owner = await signUp(t.api);
    const email = uniqueEmail('joiner');
    const joiner = await signUp(t.api, { email });
    const list = `/v1/env-groups?ownerId=${owner.workspaceId}`;
    expect((await t.api.get(list, joiner)).status).toBe(404);
    const invite = await t.api.post('/v1/team-invites', { email, role: 'viewer' }, owner);
    expect((await t.api.post(`/v1/team-invites/${invite.body.token}/accept`, undefined, joiner)).status).toBe(200);
    expect((await t.api.get(list, joiner)).status).toBe(200);
  });

  it("a cached API key's lastUsedAt advances once per touch interval", async () => {
    const owner = await signUp(t.api);
    const key = await createApiKey(t.api, owner);
    expect((await t.api.get('/v1/users', { token: key.token })).status).toBe(200);
    const first = await lastUsedAt(owner, key.id);
    expect(first).toBeGreaterThan(Date.now() - 10_000);
    // Within the interval, hits write nothing.
    expect((await t.api.get('/v1/users', { token: key.token })).status).toBe(200);
    expect(await lastUsedAt(owner, key.id)).toBe(first);
    await sleep(2200);
    expect((await t.api.get('/v1/users', { token: key.token })).status).toBe(200);
    const second = await lastUsedAt(owner, key.id);
    expect(second).toBeGreaterThanOrEqual(first + 2000);
    await sleep(2200);
    expect((await t.api.get('/v1/users', { token: key.token })).status).toBe(200);
    expect(await lastUsedAt(owner, key.id)).toBeGreaterThanOrEqual(second + 2000);
  });
});
