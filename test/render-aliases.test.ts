/**
 * Render's aliases (issue 34, item 10): the deprecated `/v1/redis` routes on a real key-value server, and
 * `PATCH`/`DELETE /v1/owners/:ownerId/members/:userId`, with every body checked against Render's schemas.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { hasRedisServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { renderSchemas } from './helpers/render-schemas.js';
import { bootServer, type TestServer } from './helpers/server.js';

const redisOk = requireOrSkip('redis-server', hasRedisServer());
const render = renderSchemas();

let server: TestServer;
let api: Client;
let owner: TestUser, other: TestUser;
beforeAll(async () => {
  server = await bootServer({ SLIPWAY_DATASTORE_CHECK_MS: '300' });
  api = client(server.url);
  [owner, other] = await Promise.all([signUp(api), signUp(api)]);
});
afterAll(() => server?.close());

describe('/v1/redis (deprecated: the key-value routes under Render’s older name)', () => {
  it('is in the OpenAPI document as Render’s six operations, each deprecated', async () => {
    const doc = (await api.get('/v1/openapi.json')).body;
    const ops = Object.entries<Record<string, { deprecated?: boolean }>>(doc.paths)
      .filter(([p]) => p === '/v1/redis' || p.startsWith('/v1/redis/'))
      .flatMap(([p, item]) => Object.entries(item).map(([m, op]) => [`${m} ${p}`, op.deprecated] as const));
    expect(Object.fromEntries(ops)).toEqual({
      'get /v1/redis': true,
      'post /v1/redis': true,
      'get /v1/redis/{redisId}': true,
      'patch /v1/redis/{redisId}': true,
      'delete /v1/redis/{redisId}': true,
      'get /v1/redis/{redisId}/connection-info': true,
    });
    expect(doc.paths['/v1/key-value'].get.deprecated).toBeUndefined();
  });

  it.skipIf(!redisOk)(
    'creates, lists, reads, updates, connects to and deletes a real server in Render’s bodies',
    async () => {
      const created = await api.post(
        '/v1/redis',
        { name: 'legacy-cache', plan: 'free', ownerId: owner.workspaceId },
        owner,
      );
      expect(created.status, created.text).toBe(201);
      expect(render.response('post', '/redis', 201, created.body)).toEqual([]);
      const id = created.body.id as string;
      await untilStatus(api, owner, `/v1/redis/${id}`, 'available');

      // The same datastore under both names.
      const viaKeyValue = await api.get(`/v1/key-value/${id}`, owner);
      expect(viaKeyValue.status).toBe(200);
      const got = await api.get(`/v1/redis/${id}`, owner);
      expect(render.response('get', '/redis/{redisId}', 200, got.body)).toEqual([]);
      expect({ ...got.body, status: undefined }).toEqual({ ...viaKeyValue.body, status: undefined });

      const list = await api.get('/v1/redis', owner);
      expect(list.status).toBe(200);
      expect(render.response('get', '/redis', 200, list.body)).toEqual([]);
      expect(list.body.map((e: { redis: { id: string } }) => e.redis.id)).toEqual([id]);

      const patched = await api.patch(`/v1/redis/${id}`, { name: 'renamed', maxmemoryPolicy: 'allkeys_lru' }, owner);
      expect(patched.status, patched.text).toBe(200);
      expect(render.response('patch', '/redis/{redisId}', 200, patched.body)).toEqual([]);
      expect(patched.body.name).toBe('renamed');
      expect((await api.patch(`/v1/redis/${id}`, { persistence: true }, owner)).status).toBe(400);

      const info = await api.get(`/v1/redis/${id}/connection-info`, owner);
      expect(info.status).toBe(200);
      expect(render.response('get', '/redis/{redisId}/connection-info', 200, info.body)).toEqual([]);
      expect(info.body.redisCLICommand).toBe(`redis-cli -u ${info.body.externalConnectionString}`);
      expect(info.body.cliCommand).toBeUndefined();
      const redis = new Redis(info.body.externalConnectionString, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await redis.connect();
        await redis.set('k', 'v');
        expect(await redis.get('k')).toBe('v');
      } finally {
        redis.disconnect();
      }

      // Another workspace's id is a 404 on every route; a viewer reads but does not write.
      for (const [method, path] of [
        ['GET', `/v1/redis/${id}`],
        ['GET', `/v1/redis/${id}/connection-info`],
        ['DELETE', `/v1/redis/${id}`],
      ] as const)
        expect((await api.call(method, path, other)).status, `${method} ${path}`).toBe(404);
      expect((await api.get(`/v1/redis?ownerId=${owner.workspaceId}`, other)).status).toBe(404);
      const viewer = await addMember(api, owner, 'viewer');
      expect((await api.get(`/v1/redis/${id}`, viewer)).status).toBe(200);
      expect((await api.get(`/v1/redis/${id}/connection-info`, viewer)).status).toBe(403);
      expect((await api.delete(`/v1/redis/${id}`, viewer)).status).toBe(403);

      expect((await api.delete(`/v1/redis/${id}`, owner)).status).toBe(204);
      expect((await api.get(`/v1/key-value/${id}`, owner)).status).toBe(404);
      const audit = await api.get('/v1/audit-logs?limit=100', owner);
      const events = (audit.body as { auditLog: { event: string } }[]).map((e) => e.auditLog.event);
      expect(events).toEqual(expect.arrayContaining(['CreateRedisEvent', 'DeleteRedisEvent']));
    },
    60_000,
  );
});

describe('PATCH and DELETE /v1/owners/{ownerId}/members/{userId} (Render’s path for the team-member routes)', () => {
  it('changes roles in Render’s names and body, keeps an owner sent ADMIN, and removes a member', async () => {
    const member = await addMember(api, owner, 'viewer');
    const url = `/v1/owners/${owner.workspaceId}/members/${member.id}`;
    const patched = await api.patch(url, { role: 'DEVELOPER' }, owner);
    expect(patched.status, patched.text).toBe(200);
    expect(render.response('patch', '/owners/{ownerId}/members/{userId}', 200, patched.body)).toEqual([]);
    expect(patched.body).toMatchObject({ userId: member.id, role: 'DEVELOPER' });
    const slipwayView = await api.get(`/v1/team-members?limit=100`, owner);
    const row = slipwayView.body.find((e: { teamMember: { userId: string } }) => e.teamMember.userId === member.id);
    expect(row.teamMember.role).toBe('developer');

    expect((await api.patch(url, { role: 'ADMIN' }, owner)).body.role).toBe('ADMIN');
    expect((await api.patch(url, { role: 'WORKSPACE_VIEWER' }, owner)).body.role).toBe('WORKSPACE_VIEWER');
    const billing = await api.patch(url, { role: 'WORKSPACE_BILLING' }, owner);
    expect(billing.status).toBe(400);
    expect(billing.body).toMatchObject({ code: 'validation_failed', details: [{ field: 'role' }] });
    expect((await api.patch(url, { role: 'superuser' }, owner)).status).toBe(400);

    // An owner sent Render's ADMIN (what Render shows for an owner) stays an owner.
    const self = `/v1/owners/${owner.workspaceId}/members/${owner.id}`;
    const kept = await api.patch(self, { role: 'ADMIN' }, owner);
    expect(kept.status, kept.text).toBe(200);
    const me = (await api.get('/v1/team-members?limit=100', owner)).body.find(
      (e: { teamMember: { userId: string } }) => e.teamMember.userId === owner.id,
    );
    expect(me.teamMember.role).toBe('owner');

    expect((await api.delete(url, owner)).status).toBe(204);
    expect((await api.delete(url, owner)).status).toBe(404);
    const audit = await api.get('/v1/audit-logs?limit=100', owner);
    const events = (audit.body as { auditLog: { event: string } }[]).map((e) => e.auditLog.event);
    expect(events).toEqual(expect.arrayContaining(['ChangeTeamMemberRoleEvent', 'RemoveUserFromTeamEvent']));
  });

  it('answers 404 for another workspace and enforces the roles of the routes it aliases', async () => {
    const member = await addMember(api, owner, 'viewer');
    const developer = await addMember(api, owner, 'developer');
    const admin = await addMember(api, owner, 'admin');
    const url = `/v1/owners/${owner.workspaceId}/members/${member.id}`;
    // Another workspace: its ownerId as the path, or this member's id under the caller's own workspace.
    expect((await api.patch(url, { role: 'DEVELOPER' }, other)).status).toBe(404);
    expect((await api.delete(url, other)).status).toBe(404);
    expect(
      (await api.patch(`/v1/owners/${other.workspaceId}/members/${member.id}`, { role: 'DEVELOPER' }, other)).status,
    ).toBe(404);
    // Developers do not manage members; admins do, but do not grant or take away the owner role.
    const denied = await api.patch(url, { role: 'DEVELOPER' }, developer);
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('forbidden');
    expect((await api.delete(url, developer)).status).toBe(403);
    expect((await api.patch(url, { role: 'owner' }, admin)).status).toBe(403);
    expect(
      (await api.patch(`/v1/owners/${owner.workspaceId}/members/${owner.id}`, { role: 'ADMIN' }, admin)).status,
    ).toBe(403);
    expect((await api.patch(url, { role: 'DEVELOPER' }, admin)).status).toBe(200);
    // The last owner cannot leave.
    expect((await api.delete(`/v1/owners/${owner.workspaceId}/members/${owner.id}`, owner)).status).toBe(409);
  });
});
