import { Type } from '@sinclair/typebox';
import { requireUser } from '../../core/auth.js';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { defineRoute } from '../route.js';
import {
  DEFAULT_LIMIT,
  Email,
  Envelope,
  IdParam,
  ListQuery,
  NoContent,
  OwnerIdQuery,
  Role,
} from '../schemas/common.js';
import { InviteBody, inviteBody, TeamMemberBody, teamMemberBody } from '../schemas/team.js';

const MemberParams = Type.Object({ userId: IdParam });
const OwnerQuery = Type.Object({ ownerId: OwnerIdQuery });

export function teamRoutes({ team, guard, config }: HttpDeps) {
  const member = async (workspaceId: string, userId: string) => teamMemberBody(await team.member(workspaceId, userId));

  return [
    defineRoute({
      method: 'GET',
      url: '/v1/team-members',
      summary: 'List the members of a workspace',
      tags: ['Team'],
      access: 'viewer',
      schema: {
        querystring: Type.Object({ ownerId: OwnerIdQuery, ...ListQuery }),
        response: { 200: Envelope('teamMember', TeamMemberBody) },
      },
      handler: async (req) => {
        const { workspaceId } = await guard.context(req, req.query.ownerId);
        const rows = await team.listMembers(workspaceId, {
          afterUserId: decodeCursor(req.query.cursor),
          limit: req.query.limit ?? DEFAULT_LIMIT,
        });
        return envelope(
          'teamMember',
          rows.map(teamMemberBody).map((m) => ({ ...m, id: m.userId })),
        );
      },
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/team-members/:userId',
      summary: "Change a member's role",
      tags: ['Team'],
      access: 'admin',
      audit: 'ChangeTeamMemberRoleEvent',
      schema: {
        params: MemberParams,
        querystring: OwnerQuery,
        body: Type.Object({ role: Role }),
        response: { 200: TeamMemberBody },
      },
      handler: async (req) => {
        const { workspaceId, role } = await guard.context(req, req.query.ownerId);
        await team.changeRole(workspaceId, role, req.params.userId, req.body.role);
        return member(workspaceId, req.params.userId);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/team-members/:userId',
      summary: 'Remove a member from a workspace',
      tags: ['Team'],
      access: 'admin',
      audit: 'RemoveUserFromTeamEvent',
      schema: { params: MemberParams, querystring: OwnerQuery, response: { 204: NoContent } },
      handler: async (req, reply) => {
        const { workspaceId, role } = await guard.context(req, req.query.ownerId);
        await team.removeMember(workspaceId, role, req.params.userId);
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/team-invites',
      summary: 'Invite someone by email (the token is shown once)',
      tags: ['Team'],
      access: 'admin',
      audit: 'InviteToTeamEvent',
      schema: {
        body: Type.Object({ email: Email, role: Role, ownerId: OwnerIdQuery }),
        response: {
          201: Type.Composite([InviteBody, Type.Object({ token: Type.String(), acceptUrl: Type.String() })]),
        },
      },
      handler: async (req, reply) => {
        const { workspaceId, role } = await guard.context(req, req.body.ownerId);
        const p = principalOf(req);
        const { invite, token } = await team.invite(
          workspaceId,
          role,
          p.kind === 'operator' ? 'operator' : p.user.id,
          req.body,
        );
        req.auditInfo.target = invite.id;
        const acceptUrl = `${config.publicUrl}/v1/team-invites/${token}/accept`;
        return reply.code(201).send({ ...inviteBody(invite), token, acceptUrl });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/team-invites',
      summary: 'List pending invites',
      tags: ['Team'],
      access: 'admin',
      schema: {
        querystring: Type.Object({ ownerId: OwnerIdQuery, ...ListQuery }),
        response: { 200: Envelope('teamInvite', InviteBody) },
      },
      handler: async (req) => {
        const { workspaceId } = await guard.context(req, req.query.ownerId);
        const rows = await team.listInvites(workspaceId, {
          beforeId: decodeCursor(req.query.cursor),
          limit: req.query.limit ?? DEFAULT_LIMIT,
        });
        return envelope('teamInvite', rows.map(inviteBody));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/team-invites/:inviteId',
      summary: 'Revoke a pending invite',
      tags: ['Team'],
      access: 'admin',
      audit: 'RevokeTeamInviteEvent',
      schema: { params: Type.Object({ inviteId: IdParam }), response: { 204: NoContent } },
      handler: async (req, reply) => {
        const invite = await team.getInvite(req.params.inviteId);
        await guard.resource(req, invite.workspaceId, 'invite');
        await team.revokeInvite(invite.id);
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/team-invites/:token/accept',
      summary: 'Join the workspace of an invite addressed to you',
      tags: ['Team'],
      access: 'signed-in',
      audit: 'AcceptTeamInviteEvent',
      schema: {
        params: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: TeamMemberBody },
      },
      handler: async (req) => {
        const user = requireUser(principalOf(req));
        const invite = await team.checkInvite(req.params.token, user.email);
        await team.accept(invite, user);
        req.auditInfo.workspaceId = invite.workspaceId;
        req.auditInfo.target = invite.workspaceId;
        return member(invite.workspaceId, user.id);
      },
    }),
  ];
}
