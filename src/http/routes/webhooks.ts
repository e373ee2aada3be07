import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import { badRequest } from '../../lib/errors.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, Envelope, IdParam, ListQuery, Name, NoContent, Timestamp, toDate } from '../schemas/common.js';
import { EventFilter, WebhookBody, webhookBody, WebhookEventBody, webhookEventBody } from '../schemas/webhooks.js';

const Params = Type.Object({ webhookId: IdParam });
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const TAGS = ['Webhooks'];

/** Render's webhook routes, plus Slipway's test ping and secret rotation. The body carries the secret: admins only. */
export function webhookRoutes(deps: HttpDeps) {
  const { guard, webhooks } = deps;
  async function load(req: FastifyRequest, id: string) {
    const webhook = await webhooks.get(id);
    await guard.resource(req, webhook.workspaceId, 'webhook');
    req.auditInfo.target = webhook.id;
    return webhook;
  }

  return [
    defineRoute({
      method: 'POST',
      url: '/v1/webhooks',
      summary: 'Create a webhook (its signing secret is in the answer)',
      tags: TAGS,
      access: 'admin',
      audit: 'CreateWebhookEvent',
      schema: {
        body: Type.Object({
          ownerId: Type.Optional(
            Type.String({ maxLength: 64, description: 'Workspace (tea-…); default: your default workspace' }),
          ),
          name: Name,
          url: Url,
          enabled: Type.Optional(Type.Boolean({ default: true })),
          eventFilter: Type.Optional(EventFilter),
        }),
        response: { 201: WebhookBody },
      },
      handler: async (req, reply) => {
        const { workspaceId } = await guard.context(req, req.body.ownerId);
        const { name, url, enabled = true, eventFilter = [] } = req.body;
        const created = await webhooks.create(workspaceId, { name, url, enabled, eventFilter });
        req.auditInfo.target = created.webhook.id;
        return reply.code(201).send(webhookBody(created));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/webhooks',
      summary: 'List webhooks, newest first',
      tags: TAGS,
      access: 'admin',
      schema: {
        querystring: Type.Object({
          ownerId: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
          ...ListQuery,
        }),
        response: { 200: Envelope('webhook', WebhookBody) },
      },
      handler: async (req) => {
        const workspaceIds = await guard.listScope(req, req.query.ownerId);
        const rows = await webhooks.list({
          workspaceIds,
          beforeId: decodeCursor(req.query.cursor),
          limit: req.query.limit ?? DEFAULT_LIMIT,
        });
        return envelope(
          'webhook',
          rows.map((r) => webhookBody(webhooks.view(r))),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/webhooks/:webhookId',
      summary: 'Retrieve a webhook',
      tags: TAGS,
      access: 'admin',
      schema: { params: Params, response: { 200: WebhookBody } },
      handler: async (req) => webhookBody(webhooks.view(await load(req, req.params.webhookId))),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/webhooks/:webhookId',
      summary: 'Update a webhook (re-enabling one clears its failure streak)',
      tags: TAGS,
      access: 'admin',
      audit: 'UpdateWebhookEvent',
      schema: {
        params: Params,
        body: Type.Object({
          name: Type.Optional(Name),
          url: Type.Optional(Url),
          enabled: Type.Optional(Type.Boolean()),
          eventFilter: Type.Optional(EventFilter),
        }),
        response: { 200: WebhookBody },
      },
      handler: async (req) => webhookBody(await webhooks.update(await load(req, req.params.webhookId), req.body)),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/webhooks/:webhookId',
      summary: 'Delete a webhook (its pending deliveries and log go with it)',
      tags: TAGS,
      access: 'admin',
      audit: 'DeleteWebhookEvent',
      schema: { params: Params, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await webhooks.remove(await load(req, req.params.webhookId));
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/webhooks/:webhookId/events',
      summary: "A webhook's delivery log: every attempt, newest first",
      tags: TAGS,
      access: 'admin',
      schema: {
        params: Params,
        querystring: Type.Object({
          sentBefore: Type.Optional(Timestamp),
          sentAfter: Type.Optional(Timestamp),
          ...ListQuery,
        }),
        response: { 200: Envelope('webhookEvent', WebhookEventBody) },
      },
      handler: async (req) => {
        const webhook = await load(req, req.params.webhookId);
        const q = req.query;
        const sentBefore = toDate(q.sentBefore);
        const sentAfter = toDate(q.sentAfter);
        if (sentBefore && sentAfter && sentAfter > sentBefore)
          throw badRequest('sentAfter must not be after sentBefore');
        const rows = await webhooks.attempts(webhook, {
          sentBefore,
          sentAfter,
          beforeId: decodeCursor(q.cursor),
          limit: q.limit ?? DEFAULT_LIMIT,
        });
        return envelope('webhookEvent', rows.map(webhookEventBody));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/webhooks/:webhookId/test',
      summary: 'Send a signed webhook_test event through the delivery queue (see the delivery log)',
      tags: TAGS,
      access: 'admin',
      audit: 'TestWebhookEvent',
      schema: { params: Params, response: { 202: Type.Object({ eventId: Type.String() }) } },
      handler: async (req, reply) =>
        reply.code(202).send({ eventId: await webhooks.sendTest(await load(req, req.params.webhookId)) }),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/webhooks/:webhookId/rotate-secret',
      summary: 'Replace the signing secret; the old one also signs for 24 hours',
      tags: TAGS,
      access: 'admin',
      audit: 'RotateWebhookSecretEvent',
      schema: { params: Params, response: { 200: WebhookBody } },
      handler: async (req) => webhookBody(await webhooks.rotateSecret(await load(req, req.params.webhookId))),
    }),
  ];
}
