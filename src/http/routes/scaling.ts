import { Type } from '@sinclair/typebox';
import { purgeCache } from '../../core/services/cache.js';
import { MAX_INSTANCES } from '../../model/services.js';
import type { HttpDeps } from '../deps.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';
import { defineRoute } from '../route.js';
import { NoContent } from '../schemas/common.js';

const Target = Type.Object({ enabled: Type.Boolean(), percentage: Type.Integer() });
/** Render's autoscaling body (webServiceDetails.autoscaling), every field required as in Render's schema. */
const AutoscalingBody = Type.Object({
  enabled: Type.Boolean(),
  min: Type.Integer(),
  max: Type.Integer(),
  criteria: Type.Object({ cpu: Target, memory: Target }),
});

/**
 * Render's scaling routes: a fixed count, or autoscaling on CPU and memory (docs/deploys.md, "Scaling"); and its cache
 * purge, which has no cache to purge here.
 */
export function scalingRoutes(deps: HttpDeps) {
  const { services } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/scale',
      summary: "Run this many instances (Render's scale): the supervisor starts or stops the difference at once",
      tags: ['Services'],
      access: 'developer',
      audit: 'ScaleServiceEvent',
      schema: {
        params: ServiceParams,
        body: Type.Object({ numInstances: Type.Integer({ minimum: 1, maximum: MAX_INSTANCES }) }),
        response: { 202: NoContent },
      },
      handler: async (req, reply) => {
        await services.scale(await loadService(deps, req, req.params.serviceId), req.body.numInstances);
        return reply.code(202).send(null);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/cache/purge',
      summary: "Purge the service's edge cache (Render's): Slipway caches no responses, so this is a 409 saying so",
      tags: ['Services'],
      access: 'developer',
      audit: 'PurgeCacheEvent',
      schema: { params: ServiceParams, response: { 202: NoContent } },
      handler: async (req) => purgeCache(await loadService(deps, req, req.params.serviceId)),
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/services/:serviceId/autoscaling',
      summary: 'Scale on measured CPU and memory between min and max instances (numInstances is brought within them)',
      tags: ['Services'],
      access: 'developer',
      audit: 'UpdateAutoscalingEvent',
      schema: { params: ServiceParams, body: AutoscalingBody, response: { 200: AutoscalingBody } },
      handler: async (req) => {
        const row = await services.setAutoscaling(await loadService(deps, req, req.params.serviceId), req.body);
        return row.details.autoscaling!;
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/services/:serviceId/autoscaling',
      summary: 'Stop autoscaling: the service keeps the instance count it has',
      tags: ['Services'],
      access: 'developer',
      audit: 'DeleteAutoscalingEvent',
      schema: { params: ServiceParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await services.setAutoscaling(await loadService(deps, req, req.params.serviceId), null);
        return reply.code(204).send(null);
      },
    }),
  ];
}
