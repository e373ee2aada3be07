import type { FastifyInstance } from 'fastify';
import { httpDuration, httpRequests } from '../../observability/prometheus.js';
import type { HttpDeps } from '../deps.js';

/**
 * `GET /metrics`: Slipway's own Prometheus metrics, for the operator only. Not part of the
 * /v1 API (nor Render's), so it is left out of the OpenAPI document; the hook counts every
 * API request by its route pattern (not its URL, which would make a series per id).
 */
export function registerPrometheus(app: FastifyInstance, deps: Pick<HttpDeps, 'prometheus'>) {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    httpRequests.inc({ method: request.method, route, status_code: String(reply.statusCode) });
    httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
  app.route({
    method: 'GET',
    url: '/metrics',
    config: { access: 'operator' },
    schema: { hide: true },
    handler: async (_req, reply) => {
      reply.header('content-type', deps.prometheus.contentType);
      return deps.prometheus.metrics();
    },
  });
}
