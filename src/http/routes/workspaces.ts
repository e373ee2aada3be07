import { Type } from '@sinclair/typebox';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import { notFound } from '../../lib/errors.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { defineRoute } from '../route.js';
import { OwnerBody, ownerBody } from '../schemas/bodies.js';
import { DEFAULT_LIMIT, Envelope, IdParam, ListQuery } from '../schemas/common.js';

const RENDER_ROLE = { owner: 'ADMIN', admin: 'ADMIN', developer: 'DEVELOPER', viewer: 'WORKSPACE_VIEWER' } as const;

export function workspaceRoutes({ repos, guard }: HttpDeps) {
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
        const p = principalOf(req);
        const onlyIds =
          p.kind === 'operator'
            ? undefined
            : p.kind === 'api_key'
              ? [p.apiKey.workspaceId]
              : await repos.workspaces.workspaceIdsOf(p.user.id);
        const rows = await repos.workspaces.list({
          onlyIds,
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
        const workspace = await repos.workspaces.get(req.params.ownerId);
        if (!workspace) throw notFound('workspace');
        return ownerBody(workspace);
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
                200: Type.Array(
                  Type.Object({
                    userId: Type.String(),
                    name: Type.String(),
                    email: Type.String(),
                    status: Type.Literal('active'),
                    role: Type.String(),
                    mfaEnabled: Type.Boolean(),
                  }),
                ),
              },
            },
            handler: async (req) => {
              await guard.resource(req, req.params.ownerId, 'workspace');
              const members = await repos.workspaces.listMembers(req.params.ownerId, { limit: 1000 });
              return members.map((m) => ({
                userId: m.userId,
                name: m.name,
                email: m.email,
                status: 'active' as const,
                role: RENDER_ROLE[m.role],
                mfaEnabled: false,
              }));
            },
          }),
        ]
      : []),
  ]);
}
