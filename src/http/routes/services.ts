import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { envelope, envelopeOf } from '../../lib/cursor.js';
import { SUSPENDED } from '../../model/enums.js';
import type { HttpDeps } from '../deps.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';
import { defineRoute } from '../route.js';
import { Envelope, ListQuery, literalUnion, NoContent, Timestamp, listWindow } from '../schemas/common.js';
import {
  ServiceAndDeploy,
  ServiceBody,
  serviceBody,
  ServicePATCH,
  ServicePOST,
  ServicePreviewPOST,
} from '../schemas/services.js';

const StringList = Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 50 }));
const ServiceInstance = Type.Object(
  { id: Type.String(), createdAt: Type.String({ format: 'date-time' }) },
  { title: 'serviceInstance' },
);

/** Services: Render's CRUD plus suspend/resume/restart (docs/architecture.md, "API conventions"). */
export function serviceRoutes(deps: HttpDeps) {
  const { guard, services, urls, registryCredentials } = deps;
  const body = async (row: Parameters<typeof serviceBody>[0]) =>
    serviceBody(row, urls, (await registryCredentials.namesFor([row]))?.(row));

  const load = (req: FastifyRequest, serviceId: string) => loadService(deps, req, serviceId);

  return [
    defineRoute({
      method: 'POST',
      url: '/v1/services',
      summary: 'Create a service (and start its first deploy when it has a repo)',
      tags: ['Services'],
      access: 'developer',
      audit: 'CreateServerEvent',
      schema: {
        body: ServicePOST,
        response: { 201: ServiceAndDeploy },
      },
      handler: async (req, reply) => {
        const { workspaceId } = await guard.context(req, req.body.ownerId);
        const { service, deployId } = await services.create(workspaceId, req.body);
        req.auditInfo.target = service.id;
        return reply.code(201).send({ service: await body(service), ...(deployId ? { deployId } : {}) });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services',
      summary: 'List services, newest first',
      tags: ['Services'],
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ownerId: StringList,
          name: StringList,
          type: StringList,
          environmentId: StringList,
          suspended: Type.Optional(Type.Array(literalUnion(SUSPENDED), { maxItems: SUSPENDED.length })),
          createdBefore: Type.Optional(Timestamp),
          createdAfter: Type.Optional(Timestamp),
          updatedBefore: Type.Optional(Timestamp),
          updatedAfter: Type.Optional(Timestamp),
          ...ListQuery,
        }),
        response: { 200: Envelope('service', ServiceBody) },
      },
      handler: async (req) => {
        const q = req.query;
        const workspaceIds = await guard.listScope(req, q.ownerId);
        const rows = await services.list({
          workspaceIds,
          name: q.name,
          type: q.type,
          environmentId: q.environmentId,
          suspended: q.suspended,
          ...listWindow(q),
        });
        const nameOf = await registryCredentials.namesFor(rows); // one query for the page's credentials
        const item = (r: (typeof rows)[number]) => ({
          ...serviceBody(r, urls, nameOf?.(r)),
          blueprint: r.manager ?? undefined,
        });
        // envelopeOf shares a page by its cached rows, which a credential's rename does not change: such a page is
        // built afresh.
        return nameOf ? envelope('service', rows.map(item)) : envelopeOf('service', rows, item);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId',
      summary: 'Retrieve a service',
      tags: ['Services'],
      access: 'viewer',
      schema: { params: ServiceParams, response: { 200: ServiceBody } },
      handler: async (req) => {
        const service = await load(req, req.params.serviceId);
        return { ...(await body(service)), blueprint: await deps.blueprints.managerOf(service.id) };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/instances',
      summary: 'List the running instances (their ids label the logs and metrics)',
      tags: ['Services'],
      access: 'viewer',
      schema: { params: ServiceParams, response: { 200: Type.Array(ServiceInstance) } },
      handler: async (req) => {
        const service = await load(req, req.params.serviceId);
        const rows = await services.instancesOf(service);
        return rows.map((i) => ({ id: i.id, createdAt: (i.startedAt ?? new Date()).toISOString() }));
      },
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/services/:serviceId',
      summary: 'Update a service (numInstances applies at once; commands and the rest on the next deploy)',
      tags: ['Services'],
      access: 'developer',
      audit: 'UpdateServiceNameEvent',
      schema: { params: ServiceParams, body: ServicePATCH, response: { 200: ServiceBody } },
      handler: async (req) => body(await services.update(await load(req, req.params.serviceId), req.body)),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/services/:serviceId',
      summary: 'Delete a service: stops everything and removes its data',
      tags: ['Services'],
      access: 'developer',
      audit: 'DeleteServerEvent',
      schema: { params: ServiceParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await services.remove(await load(req, req.params.serviceId));
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/suspend',
      summary: 'Suspend a service: stops its instances, answers 503',
      tags: ['Services'],
      access: 'developer',
      audit: 'SuspendServiceEvent',
      schema: { params: ServiceParams, response: { 202: ServiceBody } },
      handler: async (req, reply) =>
        reply.code(202).send(await body(await services.suspend(await load(req, req.params.serviceId)))),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/resume',
      summary: 'Resume a suspended service',
      tags: ['Services'],
      access: 'developer',
      audit: 'ResumeServiceEvent',
      schema: { params: ServiceParams, response: { 202: ServiceBody } },
      handler: async (req, reply) =>
        reply.code(202).send(await body(await services.resume(await load(req, req.params.serviceId)))),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/preview',
      summary:
        "Create a preview of an image service on another tag or digest of its image (Render's), deployed at once",
      tags: ['Services'],
      access: 'developer',
      audit: 'CreateServerEvent',
      schema: {
        params: ServiceParams,
        body: ServicePreviewPOST,
        response: { 200: ServiceAndDeploy },
      },
      handler: async (req) => {
        const parent = await load(req, req.params.serviceId);
        const { service, deployId } = await services.preview(parent, req.body);
        req.auditInfo.target = service.id;
        return { service: await body(service), ...(deployId ? { deployId } : {}) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/restart',
      summary: 'Restart the live instances, rolling, with no downtime',
      tags: ['Services'],
      access: 'developer',
      audit: 'RestartServiceEvent',
      schema: { params: ServiceParams, response: { 200: ServiceBody } },
      handler: async (req) => {
        const service = await load(req, req.params.serviceId);
        await deps.engine.restart(service);
        return body(service);
      },
    }),
  ];
}
