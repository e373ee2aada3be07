import { describe, expect, it } from 'vitest';
import { useServer } from './helpers/server.js';
import { addMember, createApiKey, signUp } from './helpers/client.js';

const OPERATOR_TOKEN = 'operator-token-for-audit-tests-0123456789';
const t = useServer({ SLIPWAY_OPERATOR_TOKEN: OPERATOR_TOKEN });

type Entry = {
  auditLog: {
    id: string;
    event: string;
    status: string;
    actor: Record<string, string>;
    metadata: Record<string, string>;
    timestamp: string;
  };
};

describe('audit log', () => {
  it('records every mutating request with actor, action, target, status, request id and IP, and no secrets', async () => {
    const owner = await signUp(t.api);
    const key = await createApiKey(t.api, owner, 'deploy bot');
    const invite = await t.api.post(
      '/v1/team-invites',
      { email: 'someone@example.com', role: 'viewer' },
      { token: key.token, headers: { 'request-id': 'trace-invite-1' } },
    );
    expect(invite.status).toBe(201);
    expect(invite.headers.get('request-id')).toBe('trace-invite-1');
    const denied = await t.api.patch(`/v1/team-members/${owner.id}`, { role: 'viewer' }, owner); // last owner: 409
    expect(denied.status).toBe(409);
    await t.api.post('/v1/auth/login', { email: owner.email, password: 'wrong password' });

    const res = await t.api.get('/v1/audit-logs', owner);
    expect(res.status).toBe(200);
    const entries = (res.body as Entry[]).map((e) => e.auditLog);
    expect(entries.map((e) => e.event)).toEqual([
      'LoginEvent',
      'ChangeTeamMemberRoleEvent',
      'InviteToTeamEvent',
      'CreateApiKeyEvent',
      'CreateWorkspaceEvent',
    ]);
    const [login, change, inviteEntry, keyEntry, register] = entries;
    expect(register).toMatchObject({ status: 'success', actor: { type: 'user', id: owner.id, email: owner.email } });
    expect(register!.metadata).toMatchObject({
      action: 'POST /v1/auth/register',
      target: owner.workspaceId,
      ip: '127.0.0.1',
      statusCode: '201',
    });
    expect(keyEntry!.metadata).toMatchObject({ target: key.id, method: 'POST', path: '/v1/api-keys' });
    expect(inviteEntry).toMatchObject({ status: 'success', actor: { type: 'rest_api', id: owner.id } });
    expect(inviteEntry!.metadata).toMatchObject({
      requestId: 'trace-invite-1',
      apiKeyId: key.id,
      target: invite.body.id,
    });
    expect(change).toMatchObject({ status: 'error', event: 'ChangeTeamMemberRoleEvent' });
    expect(change!.metadata).toMatchObject({ statusCode: '409', target: owner.id });
    expect(login).toMatchObject({ status: 'error', actor: { type: 'user', email: owner.email } });
    for (const e of entries) expect(e.id).toMatch(/^aud-[0-9a-v]{20}$/);

    // Neither the password, the API key nor the invite token appears anywhere.
    const all = JSON.stringify((await t.api.get('/v1/audit-logs?limit=100', owner)).body);
    for (const secret of [owner.password, 'wrong password', key.token, invite.body.token])
      expect(all).not.toContain(secret);
  });

  it('hides invite tokens that travel in the path', async () => {
    const owner = await signUp(t.api);
    const invite = await t.api.post('/v1/team-invites', { email: 'late@example.com', role: 'viewer' }, owner);
    const someone = await signUp(t.api);
    await t.api.post(`/v1/team-invites/${invite.body.token}/accept`, undefined, someone); // 404: not addressed to them
    const theirs = await t.api.get('/v1/audit-logs', someone);
    const accept = (theirs.body as Entry[]).find((e) => e.auditLog.event === 'AcceptTeamInviteEvent')!;
    expect(accept.auditLog.metadata.path).toBe('/v1/team-invites/[redacted]/accept');
    expect(JSON.stringify(theirs.body)).not.toContain(invite.body.token);
  });

  it('filters by time, paginates with cursors, and is per workspace', async () => {
    const owner = await signUp(t.api);
    const before = new Date().toISOString();
    for (let i = 0; i < 5; i++) await createApiKey(t.api, owner, `k${i}`);
    const page1 = await t.api.get(`/v1/audit-logs?limit=2&startTime=${before}`, owner);
    expect(page1.body).toHaveLength(2);
    const page2 = await t.api.get(`/v1/audit-logs?limit=2&startTime=${before}&cursor=${page1.body[1].cursor}`, owner);
    const page3 = await t.api.get(`/v1/audit-logs?limit=2&startTime=${before}&cursor=${page2.body[1].cursor}`, owner);
    const ids = [...page1.body, ...page2.body, ...page3.body].map((e: Entry) => e.auditLog.id);
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    expect([...ids].sort().reverse()).toEqual(ids); // newest first
    expect(
      (await t.api.get(`/v1/audit-logs?endTime=${before}`, owner)).body.map((e: Entry) => e.auditLog.event),
    ).toEqual(['CreateWorkspaceEvent']);
    const inverted = await t.api.get(`/v1/audit-logs?startTime=${new Date().toISOString()}&endTime=${before}`, owner);
    expect(inverted.status).toBe(400);
    expect((await t.api.get('/v1/audit-logs?startTime=yesterday', owner)).status).toBe(400);

    const other = await signUp(t.api);
    const theirs = (await t.api.get('/v1/audit-logs?limit=100', other)).body.map((e: Entry) => e.auditLog.id);
    expect(theirs.some((id: string) => ids.includes(id))).toBe(false);
    expect((await t.api.get(`/v1/audit-logs?ownerId=${owner.workspaceId}`, other)).status).toBe(404);
    const viewer = await addMember(t.api, owner, 'viewer');
    expect((await t.api.get(`/v1/audit-logs?ownerId=${owner.workspaceId}`, viewer)).status).toBe(403);
  });

  it("gives the operator the organization's log (every workspace's) under Render's organization path, and no one else", async () => {
    const [a, b] = [await signUp(t.api), await signUp(t.api)];
    for (const user of [a, b]) await createApiKey(t.api, user, 'org log');
    const org = '/v1/organizations/org-slipway/audit-logs';
    const res = await t.api.get(`${org}?limit=100`, { token: OPERATOR_TOKEN });
    expect(res.status, res.text).toBe(200);
    const actors = new Set(res.body.map((e: Entry) => e.auditLog.actor.email));
    expect(actors).toContain(a.email);
    expect(actors).toContain(b.email);
    // Its time range and cursor are the workspace log's.
    const page1 = await t.api.get(`${org}?limit=1`, { token: OPERATOR_TOKEN });
    const page2 = await t.api.get(`${org}?limit=1&cursor=${page1.body[0].cursor}`, { token: OPERATOR_TOKEN });
    expect(page2.body[0].auditLog.id).not.toBe(page1.body[0].auditLog.id);
    // Another organization is not this one; members of a workspace are not the organization's admins.
    expect((await t.api.get('/v1/organizations/org-other/audit-logs', { token: OPERATOR_TOKEN })).status).toBe(404);
    expect((await t.api.get(org, a)).status).toBe(403);
  });
});
