import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { HttpDeps } from '../deps.js';
import { IdParam } from '../schemas/common.js';

/** The params of every `/v1/services/:serviceId/…` route. */
export const ServiceParams = Type.Object({ serviceId: IdParam });

/** The service, if the caller may act on it with the route's role; 404 otherwise. */
export async function loadService(
  { guard, services }: Pick<HttpDeps, 'guard' | 'services'>,
  req: FastifyRequest,
  serviceId: string,
) {
  const service = await services.get(serviceId);
  await guard.resource(req, service.workspaceId, 'service');
  req.auditInfo.target = service.id;
  return service;
}
