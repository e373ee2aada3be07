import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { requireUser } from '../../core/auth.js';
import type { Role as RoleName } from '../../core/principal.js';
import type { MemberRow } from '../../store/repos/workspaces.js';
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
import {
  InviteBody,
  inviteBody,
  OwnerMemberBody,
  ownerMemberBody,
  OwnerMemberRole,
  roleFromRender,
  TeamMemberBody,
  teamMemberBody,
} from '../schemas/team.js';

const MemberParams = Type.Object({ userId: IdParam });
const OwnerQuery = Type.Object({ ownerId: OwnerIdQuery });

/** A member's role change and removal, on Slipway's path or Render's: the path's role names and member body. */
function memberRoutes(
  { team, guard }: HttpDeps,
  path: {
    url: string;
    params: TSchema;
    querystring?: TSchema;
    ownerIdOf: (req: FastifyRequest) => string | undefined;
    role: TSchema;
    toRole: (role: string) => RoleName | ((current: RoleName) => RoleName);
    body: TSchema;
    serialize: (m: MemberRow) => unknown;
  },
) {
  const userIdOf = (req: FastifyRequest) => (req.params as { userId: string }).userId;
  return [
    defineRoute({
      method: 'PATCH',
      url: path.url,
      summary: "Change a member's role",
      tags: ['Team'],
      access: 'admin',
      audit: 'ChangeTeamMemberRoleEvent',
      schema: {
        params: path.params,
        ...(path.querystring ? { querystring: path.querystring } : {}),
        body: Type.Object({ role: path.role }),
        response: { 200: path.body },
      },
      handler: async (req) => {
        const { workspaceId, role } = await guard.context(req, path.ownerIdOf(req));
        const to = path.toRole((req.body as { role: string }).role);
        await team.changeRole(workspaceId, role, userIdOf(req), to);
        return path.serialize(await team.member(workspaceId, userIdOf(req)));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: path.url,
      summary: 'Remove a member from a workspace',
      tags: ['Team'],
      access: 'admin',
      audit: 'RemoveUserFromTeamEvent',
      schema: {
        params: path.params,
        ...(path.querystring ? { querystring: path.querystring } : {}),
        response: { 204: NoContent },
      },
      handler: async (req, reply) => {
        const { workspaceId, role } = await guard.context(req, path.ownerIdOf(req));
        await team.removeMember(workspaceId, role, userIdOf(req));
        return reply.code(204).send(null);
      },
    }),
  ];
}

export function teamRoutes(deps: HttpDeps) {
  const { team, guard, config } = deps;
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
    ...memberRoutes(deps, {
      url: '/v1/team-members/:userId',
      params: MemberParams,
      querystring: OwnerQuery,
      ownerIdOf: (req) => (req.query as { ownerId?: string }).ownerId,
      role: Role,
      toRole: (role) => role as RoleName,
      body: TeamMemberBody,
      serialize: teamMemberBody,
    }),
    // Render's path for the same (update-workspace-member, remove-workspace-member): its role names and body.
    ...memberRoutes(deps, {
      url: '/v1/owners/:ownerId/members/:userId',
      params: Type.Object({ ownerId: IdParam, userId: IdParam }),
      ownerIdOf: (req) => (req.params as { ownerId: string }).ownerId,
      role: OwnerMemberRole,
      toRole: roleFromRender,
      body: OwnerMemberBody,
      serialize: ownerMemberBody,
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
        // The dashboard's invite page: it signs the invitee in or up, then accepts (POST /v1/team-invites/:token/accept).
        const acceptUrl = `${config.publicUrl}/invites/${token}`;
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
      summary: 'Join the workspace of an invite addressed to you (ownerId: the workspace joined)',
      tags: ['Team'],
      access: 'signed-in',
      audit: 'AcceptTeamInviteEvent',
      schema: {
        params: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: Type.Composite([TeamMemberBody, Type.Object({ ownerId: Type.String() })]) },
      },
      handler: async (req) => {
        const user = requireUser(principalOf(req));
        const invite = await team.checkInvite(req.params.token, user.email);
        await team.accept(invite, user);
        req.auditInfo.workspaceId = invite.workspaceId;
        req.auditInfo.target = invite.workspaceId;
        return { ...(await member(invite.workspaceId, user.id)), ownerId: invite.workspaceId };
      },
    }),
  ];
}
