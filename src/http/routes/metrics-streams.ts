import { Type } from '@sinclair/typebox';
import type { MetricsStream } from '../../core/metrics-streams/settings.js';
import { METRICS_STREAM_PROVIDERS } from '../../model/enums.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { IdParam, literalUnion, NoContent } from '../schemas/common.js';

const TAGS = ['Metrics'];
const Params = Type.Object({ ownerId: IdParam });
const Provider = literalUnion(METRICS_STREAM_PROVIDERS, {
  description: 'Where the metrics go; every provider is sent OTLP over HTTP (JSON) with the token as a Bearer token',
});
/** Render's PUT /metrics-stream/{ownerId} body. */
const Input = Type.Object({
  provider: Type.Optional(Provider),
  url: Type.Optional(
    Type.String({ minLength: 1, maxLength: 2048, description: 'The OTLP/HTTP base URL; /v1/metrics is added' }),
  ),
  token: Type.Optional(
    Type.String({
      maxLength: 4096,
      description: 'Write-only: never returned. Sent as Authorization: Bearer; "" removes it',
    }),
  ),
});
/** Render's metrics stream: never the token. */
const Body = Type.Object(
  { ownerId: Type.String(), provider: Provider, url: Type.String() },
  { title: 'metricsStream' },
);
const body = (s: MetricsStream) => ({ ownerId: s.workspaceId, provider: s.provider, url: s.url });

/**
 * Render's metrics stream routes: a workspace's OTLP endpoint for its services' metrics. Viewers read it (never the
 * token); admins change it, since it sends the workspace's metrics elsewhere.
 */
export function metricsStreamRoutes(deps: HttpDeps) {
  const { guard, metricsStreams } = deps;
  const owner = (req: Parameters<typeof guard.owner>[0], ownerId: string) => guard.owner(req, ownerId);
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/metrics-stream/:ownerId',
      summary: "Retrieve a workspace's metrics stream",
      tags: TAGS,
      access: 'viewer',
      schema: { params: Params, response: { 200: Body } },
      handler: async (req) => body(await metricsStreams.get(await owner(req, req.params.ownerId))),
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/metrics-stream/:ownerId',
      summary: "Create or update a workspace's metrics stream: its services' metrics go to an OTLP/HTTP endpoint",
      tags: TAGS,
      access: 'admin',
      audit: 'UpdateMetricsStreamEvent',
      schema: { params: Params, body: Input, response: { 200: Body } },
      handler: async (req) => body(await metricsStreams.put(await owner(req, req.params.ownerId), req.body)),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/metrics-stream/:ownerId',
      summary: "Delete a workspace's metrics stream",
      tags: TAGS,
      access: 'admin',
      audit: 'DeleteMetricsStreamEvent',
      schema: { params: Params, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await metricsStreams.delete(await owner(req, req.params.ownerId));
        return reply.code(204).send(null);
      },
    }),
  ];
}
