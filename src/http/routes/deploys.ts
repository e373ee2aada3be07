import { Type } from '@sinclair/typebox';
import { decodeCursor, envelopeOf } from '../../lib/cursor.js';
import { DEPLOY_STATUSES } from '../../model/enums.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, Envelope, IdParam, ListQuery, literalUnion, Timestamp, toDate } from '../schemas/common.js';
import { DeployBody, deployBody } from '../schemas/services.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';

const DeployParams = Type.Object({ serviceId: IdParam, deployId: IdParam });

/** Deploys: trigger, list, get, cancel, and rollback (docs/architecture.md, "Deploys"). */
export function deployRoutes(deps: HttpDeps) {
  const { engine, deploys } = deps;
  async function loadDeploy(req: Parameters<typeof loadService>[1], serviceId: string, deployId: string) {
    const service = await loadService(deps, req, serviceId);
    return { service, deploy: await deploys.get(service, deployId) };
  }
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/deploys',
      summary: 'Trigger a deploy',
      tags: ['Deploys'],
      access: 'developer',
      audit: 'TriggerDeployEvent',
      schema: {
        params: ServiceParams,
        body: Type.Optional(
          Type.Object({
            clearCache: Type.Optional(Type.Union([Type.Literal('clear'), Type.Literal('do_not_clear')])),
            commitId: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{4,64}$' })),
            deployMode: Type.Optional(Type.Union([Type.Literal('deploy_only'), Type.Literal('build_and_deploy')])),
          }),
        ),
        response: { 201: DeployBody },
      },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const b = req.body ?? {};
        const deploy = await deploys.trigger(service, {
          commitId: b.commitId,
          clearCache: b.clearCache === 'clear',
          deployMode: b.deployMode,
        });
        return reply.code(201).send(deployBody(deploy));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/deploys',
      summary: 'List deploys, newest first',
      tags: ['Deploys'],
      access: 'viewer',
      schema: {
        params: ServiceParams,
        querystring: Type.Object({
          status: Type.Optional(Type.Array(literalUnion(DEPLOY_STATUSES), { maxItems: DEPLOY_STATUSES.length })),
          createdBefore: Type.Optional(Timestamp),
          createdAfter: Type.Optional(Timestamp),
          finishedBefore: Type.Optional(Timestamp),
          finishedAfter: Type.Optional(Timestamp),
          ...ListQuery,
        }),
        response: { 200: Envelope('deploy', DeployBody) },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const q = req.query;
        const rows = await deploys.list(service, {
          status: q.status,
          createdAfter: toDate(q.createdAfter),
          createdBefore: toDate(q.createdBefore),
          finishedAfter: toDate(q.finishedAfter),
          finishedBefore: toDate(q.finishedBefore),
          beforeId: decodeCursor(q.cursor),
          limit: q.limit ?? DEFAULT_LIMIT,
        });
        return envelopeOf('deploy', rows, (d) => deployBody(d));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/deploys/:deployId',
      summary: 'Retrieve a deploy, with its build output',
      tags: ['Deploys'],
      access: 'viewer',
      schema: { params: DeployParams, response: { 200: DeployBody } },
      handler: async (req) =>
        deployBody((await loadDeploy(req, req.params.serviceId, req.params.deployId)).deploy, { withOutput: true }),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/deploys/:deployId/cancel',
      summary: 'Cancel a queued or running deploy',
      tags: ['Deploys'],
      access: 'developer',
      audit: 'CancelDeployEvent',
      schema: { params: DeployParams, response: { 200: DeployBody } },
      handler: async (req) =>
        deployBody(await engine.cancel((await loadDeploy(req, req.params.serviceId, req.params.deployId)).deploy)),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/rollback',
      summary: 'Roll back to an earlier deploy (its artifact, no rebuild)',
      tags: ['Deploys'],
      access: 'developer',
      audit: 'RollbackDeployEvent',
      schema: { params: ServiceParams, body: Type.Object({ deployId: IdParam }), response: { 201: DeployBody } },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        return reply.code(201).send(deployBody(await engine.rollback(service, req.body.deployId)));
      },
    }),
  ];
}
