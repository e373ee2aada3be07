import { Type } from '@sinclair/typebox';
import { requireUser } from '../../core/auth.js';
import { principalUser } from '../../core/principal.js';
import { badRequest, notFound } from '../../lib/errors.js';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { defineRoute } from '../route.js';
import { ApiKeyBody, apiKeyBody } from '../schemas/api-keys.js';
import {
  DEFAULT_LIMIT,
  Envelope,
  IdParam,
  ListQuery,
  Name,
  NoContent,
  OwnerIdQuery,
  Timestamp,
} from '../schemas/common.js';

export function apiKeyRoutes({ apiKeys, guard }: HttpDeps) {
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/api-keys',
      summary: 'Create an API key (the token is shown once)',
      tags: ['API keys'],
      access: 'admin',
      audit: 'CreateApiKeyEvent',
      schema: {
        body: Type.Object({ name: Name, expiresAt: Type.Optional(Timestamp), ownerId: OwnerIdQuery }),
        response: {
          201: Type.Composite([
            ApiKeyBody,
            Type.Object({ token: Type.String({ description: 'Shown only in this response' }) }),
          ]),
        },
      },
      handler: async (req, reply) => {
        const { workspaceId } = await guard.context(req, req.body.ownerId);
        const user = requireUser(principalOf(req));
        const expiresAt = req.body.expiresAt ? new Date(req.body.expiresAt) : undefined;
        if (expiresAt && expiresAt <= new Date()) throw badRequest('expiresAt must be in the future');
        const { apiKey, token } = await apiKeys.create({
          workspaceId,
          userId: user.id,
          name: req.body.name,
          expiresAt,
        });
        req.auditInfo.target = apiKey.id;
        return reply.code(201).send({ ...apiKeyBody(apiKey), token });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/api-keys',
      summary: 'List API keys (metadata only)',
      tags: ['API keys'],
      access: 'viewer',
      schema: {
        querystring: Type.Object({ ownerId: OwnerIdQuery, ...ListQuery }),
        response: { 200: Envelope('apiKey', ApiKeyBody) },
      },
      handler: async (req) => {
        const { workspaceId } = await guard.context(req, req.query.ownerId);
        const keys = await apiKeys.list(workspaceId, {
          beforeId: decodeCursor(req.query.cursor),
          limit: req.query.limit ?? DEFAULT_LIMIT,
        });
        return envelope('apiKey', keys.map(apiKeyBody));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/api-keys/:apiKeyId',
      summary: 'Revoke an API key',
      tags: ['API keys'],
      access: 'admin',
      audit: 'DeleteApiKeyEvent',
      schema: { params: Type.Object({ apiKeyId: IdParam }), response: { 204: NoContent } },
      handler: async (req, reply) => {
        const key = await apiKeys.get(req.params.apiKeyId);
        if (!key) throw notFound('API key');
        const { role } = await guard.resource(req, key.workspaceId, 'API key');
        await apiKeys.revoke(key, { userId: principalUser(principalOf(req))?.id, role });
        return reply.code(204).send(null);
      },
    }),
  ];
}
