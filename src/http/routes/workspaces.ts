import { Type } from '@sinclair/typebox';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { defineRoute } from '../route.js';
import { OwnerBody, ownerBody } from '../schemas/bodies.js';
import { DEFAULT_LIMIT, Envelope, IdParam, ListQuery } from '../schemas/common.js';
import { OwnerMemberBody, ownerMemberBody } from '../schemas/team.js';

export function workspaceRoutes({ workspaces, team, guard }: HttpDeps) {
  // Render calls workspaces "owners": both paths answer, with Render's bodies.
  return ['/v1/workspaces', '/v1/owners'].flatMap((base) => [
    defineRoute({
      method: 'GET',
      url: base,
      summary: 'List the workspaces you can access (Render: list-owners)',
      tags: ['Workspaces'],
      access: 'signed-in',
      schema: { querystring: Type.Object(ListQuery), response: { 200: Envelope('owner', OwnerBody) } },
      handler: async (req) => {
        const rows = await workspaces.listVisible(principalOf(req), {
          afterId: decodeCursor(req.query.cursor),
          limit: req.query.limit ?? DEFAULT_LIMIT,
        });
        return envelope('owner', rows.map(ownerBody));
      },
    }),
    defineRoute({
      method: 'GET',
      url: `${base}/:ownerId`,
      summary: 'Retrieve a workspace (Render: retrieve-owner)',
      tags: ['Workspaces'],
      access: 'viewer',
      schema: { params: Type.Object({ ownerId: IdParam }), response: { 200: OwnerBody } },
      handler: async (req) => {
        await guard.resource(req, req.params.ownerId, 'workspace');
        return ownerBody(await workspaces.get(req.params.ownerId));
      },
    }),
    ...(base === '/v1/owners'
      ? [
          defineRoute({
            method: 'GET',
            url: '/v1/owners/:ownerId/members',
            summary: 'List workspace members (Render: retrieve-owner-members)',
            tags: ['Workspaces'],
            access: 'viewer',
            schema: {
              params: Type.Object({ ownerId: IdParam }),
              response: {
                200: Type.Array(OwnerMemberBody),
              },
            },
            handler: async (req) => {
              await guard.resource(req, req.params.ownerId, 'workspace');
              return (await team.listMembers(req.params.ownerId, { limit: 1000 })).map(ownerMemberBody);
            },
          }),
        ]
      : []),
  ]);
}
