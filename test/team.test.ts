import { describe, expect, it } from 'vitest';
import { useServer } from './helpers/server.js';
import { addMember, sessionCookie, signUp, uniqueEmail } from './helpers/client.js';

const t = useServer();

describe('workspaces', () => {
  it('lists the workspaces a user belongs to and hides the others (404)', async () => {
    const a = await signUp(t.api);
    const b = await signUp(t.api);
    const list = await t.api.get('/v1/workspaces', a);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      {
        cursor: expect.any(String),
        owner: expect.objectContaining({ id: a.workspaceId, type: 'team', email: a.email }),
      },
    ]);
    expect((await t.api.get(`/v1/workspaces/${a.workspaceId}`, a)).body.id).toBe(a.workspaceId);
    const other = await t.api.get(`/v1/workspaces/${b.workspaceId}`, a);
    expect(other.status).toBe(404);
    expect(other.body.code).toBe('not_found');
    expect((await t.api.get('/v1/workspaces/tea-doesnotexist', a)).status).toBe(404);
  });
});

describe('invites and members', () => {
  it('invite -> accept by the invited user adds them with the role; the token is single-use', async () => {
    const owner = await signUp(t.api);
    const email = uniqueEmail('dev');
    const invite = await t.api.post('/v1/team-invites', { email, role: 'developer' }, owner);
    expect(invite.status).toBe(201);
    expect(invite.body).toMatchObject({ email, role: 'developer', ownerId: owner.workspaceId, status: 'pending' });
    expect(invite.body.token).toMatch(/^inv_/);
    expect(new Date(invite.body.expiresAt).getTime()).toBeGreaterThan(Date.now() + 6 * 86_400_000);
    const pending = await t.api.get('/v1/team-invites', owner);
    expect(pending.body.map((e: { teamInvite: { id: string } }) => e.teamInvite.id)).toEqual([invite.body.id]);
    expect(pending.text).not.toContain(invite.body.token);

    const dev = await signUp(t.api, { email });
    const stranger = await signUp(t.api);
    // An invite addressed to someone else looks like no invite at all.
    expect((await t.api.post(`/v1/team-invites/${invite.body.token}/accept`, undefined, stranger)).status).toBe(404);
    const accepted = await t.api.post(`/v1/team-invites/${invite.body.token}/accept`, undefined, dev);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ userId: dev.id, role: 'developer', status: 'active' });
    expect((await t.api.post(`/v1/team-invites/${invite.body.token}/accept`, undefined, dev)).status).toBe(409);

    const members = await t.api.get(`/v1/team-members?ownerId=${owner.workspaceId}`, dev);
    expect(members.status).toBe(200);
    const roles = Object.fromEntries(
      members.body.map((e: { teamMember: { userId: string; role: string } }) => [
        e.teamMember.userId,
        e.teamMember.role,
      ]),
    );
    expect(roles).toEqual({ [owner.id]: 'owner', [dev.id]: 'developer' });
    expect((await t.api.get('/v1/team-invites', owner)).body).toEqual([]);
    // The new member now sees both workspaces.
    expect((await t.api.get('/v1/workspaces', dev)).body).toHaveLength(2);
  });

  it('joins at registration or at login with inviteToken', async () => {
    const owner = await signUp(t.api);
    const viewer = await addMember(t.api, owner, 'viewer'); // registers with inviteToken
    const existing = await signUp(t.api);
    const invite = await t.api.post('/v1/team-invites', { email: existing.email, role: 'admin' }, owner);
    const login = await t.api.post('/v1/auth/login', {
      email: existing.email,
      password: existing.password,
      inviteToken: invite.body.token,
    });
    expect(login.status).toBe(200);
    const members = await t.api.get(`/v1/team-members?ownerId=${owner.workspaceId}`, { cookie: sessionCookie(login) });
    const roles = Object.fromEntries(
      members.body.map((e: { teamMember: { userId: string; role: string } }) => [
        e.teamMember.userId,
        e.teamMember.role,
      ]),
    );
    expect(roles).toMatchObject({ [viewer.id]: 'viewer', [existing.id]: 'admin' });
  });

  it('viewers read only; admins manage members but cannot grant owner', async () => {
    const owner = await signUp(t.api);
    const viewer = await addMember(t.api, owner, 'viewer');
    const admin = await addMember(t.api, owner, 'admin');
    const ws = `?ownerId=${owner.workspaceId}`;
    expect((await t.api.get(`/v1/team-members${ws}`, viewer)).status).toBe(200);
    const viewerInvite = await t.api.post(
      '/v1/team-invites',
      { email: uniqueEmail(), role: 'viewer', ownerId: owner.workspaceId },
      viewer,
    );
    expect(viewerInvite.status).toBe(403);
    expect((await t.api.patch(`/v1/team-members/${viewer.id}${ws}`, { role: 'admin' }, viewer)).status).toBe(403);

    expect((await t.api.patch(`/v1/team-members/${viewer.id}${ws}`, { role: 'developer' }, admin)).body.role).toBe(
      'developer',
    );
    expect((await t.api.patch(`/v1/team-members/${viewer.id}${ws}`, { role: 'owner' }, admin)).status).toBe(403);
    expect(
      (await t.api.post('/v1/team-invites', { email: uniqueEmail(), role: 'owner', ownerId: owner.workspaceId }, admin))
        .status,
    ).toBe(403);
    expect((await t.api.patch(`/v1/team-members/${owner.id}${ws}`, { role: 'viewer' }, admin)).status).toBe(403);
    expect((await t.api.delete(`/v1/team-members/${viewer.id}${ws}`, admin)).status).toBe(204);
    expect((await t.api.get(`/v1/team-members${ws}`, viewer)).status).toBe(404); // no longer a member
  });

  it('keeps at least one owner', async () => {
    const owner = await signUp(t.api);
    const ws = `?ownerId=${owner.workspaceId}`;
    const demote = await t.api.patch(`/v1/team-members/${owner.id}${ws}`, { role: 'admin' }, owner);
    expect(demote.status).toBe(409);
    expect((await t.api.delete(`/v1/team-members/${owner.id}${ws}`, owner)).status).toBe(409);
    const admin = await addMember(t.api, owner, 'admin');
    expect((await t.api.patch(`/v1/team-members/${admin.id}${ws}`, { role: 'owner' }, owner)).status).toBe(200);
    expect((await t.api.patch(`/v1/team-members/${owner.id}${ws}`, { role: 'admin' }, owner)).status).toBe(200);
  });

  it('two owners stepping down at once leave one owner, not none', async () => {
    for (let round = 0; round < 5; round++) {
      const owner = await signUp(t.api);
      const ws = `?ownerId=${owner.workspaceId}`;
      const other = await addMember(t.api, owner, 'admin');
      expect((await t.api.patch(`/v1/team-members/${other.id}${ws}`, { role: 'owner' }, owner)).status).toBe(200);
      const [a, b] = await Promise.all([
        t.api.patch(`/v1/team-members/${owner.id}${ws}`, { role: 'admin' }, owner),
        t.api.delete(`/v1/team-members/${other.id}${ws}`, other),
      ]);
      // Exactly one goes through; the other finds the last owner and is refused.
      expect([a.status === 200, b.status === 204].filter(Boolean)).toHaveLength(1);
      expect([a.status, b.status]).toContain(409);
      const members = await t.api.get(`/v1/team-members${ws}`, owner); // a member either way
      const owners = members.body.filter((e: { teamMember: { role: string } }) => e.teamMember.role === 'owner');
      expect(owners).toHaveLength(1);
    }
  });

  it('revoked and unknown invites', async () => {
    const owner = await signUp(t.api);
    const email = uniqueEmail();
    const invite = await t.api.post('/v1/team-invites', { email, role: 'developer' }, owner);
    expect((await t.api.delete(`/v1/team-invites/${invite.body.id}`, owner)).status).toBe(204);
    const late = await t.api.post('/v1/auth/register', {
      email,
      password: 'long enough pw',
      name: 'Late',
      inviteToken: invite.body.token,
    });
    expect(late.status).toBe(404);
    expect((await t.api.post('/v1/auth/login', { email, password: 'long enough pw' })).status).toBe(401); // nothing was created
    expect((await t.api.delete(`/v1/team-invites/${invite.body.id}`, owner)).status).toBe(404);
    expect((await t.api.patch(`/v1/team-members/usr-00000000000000000000`, { role: 'viewer' }, owner)).status).toBe(
      404,
    );
  });
});
