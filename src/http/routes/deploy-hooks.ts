import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { IdParam } from '../schemas/common.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';

const CommitRef = Type.String({
  pattern: '^[0-9a-fA-F]{4,64}$',
  description: 'Deploy this commit, not the branch head',
});
const HookBody = Type.Object(
  {
    enabled: Type.Boolean(),
    url: Type.String({ description: 'Without its key; the key is shown once, when made' }),
    keyHint: Type.Union([Type.String(), Type.Null()], { description: "The key's last 4 characters" }),
    createdAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { title: 'deployHook' },
);
type HookView = Awaited<ReturnType<HttpDeps['deployHooks']['describe']>>;
const hookBody = <T extends HookView>(v: T) => ({ ...v, createdAt: v.createdAt?.toISOString() ?? null });
const HookWithKey = Type.Composite([HookBody, Type.Object({ key: Type.String() })], { title: 'deployHookWithKey' });

/** Render's deploy hooks: manage a service's secret deploy URL, and the URL itself (docs/architecture.md, "Deploys"). */
export function deployHookRoutes(deps: HttpDeps) {
  const { deployHooks, config } = deps;
  // The hook is public (its key is the credential): limited per address like sign-in, so keys can't be guessed at speed.
  const perIp = {
    max: config.authRateLimitPerMinute,
    timeWindow: '1 minute',
    keyGenerator: (req: FastifyRequest) => `deploy-hook-ip:${req.ip}`,
  };
  return [
    defineRoute({
      method: 'POST',
      url: '/deploy/:serviceId',
      summary: 'Call a deploy hook: deploys the branch head, or the commit `ref`',
      tags: ['Deploys'],
      access: 'public',
      audit: 'TriggerDeployEvent',
      rateLimit: perIp,
      schema: {
        params: Type.Object({ serviceId: IdParam }),
        querystring: Type.Object({ key: Type.String({ minLength: 1, maxLength: 200 }), ref: Type.Optional(CommitRef) }),
        response: { 200: Type.Object({ deploy: Type.Object({ id: Type.String() }) }) },
      },
      handler: async (req) => {
        req.auditInfo.system = 'deploy_hook';
        const { service, deploy } = await deployHooks.fire(req.params.serviceId, req.query.key, req.query.ref);
        req.auditInfo.workspaceId = service.workspaceId;
        return { deploy: { id: deploy.id } };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/deploy-hook',
      summary: "The service's deploy hook: whether it is on, and its URL without the key",
      tags: ['Deploys'],
      access: 'developer',
      schema: { params: ServiceParams, response: { 200: HookBody } },
      handler: async (req) => hookBody(await deployHooks.describe(await loadService(deps, req, req.params.serviceId))),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/deploy-hook',
      summary: 'Make (or replace) the deploy hook key; the old key stops working. The key is shown this once',
      tags: ['Deploys'],
      access: 'developer',
      audit: 'RotateDeployHookEvent',
      schema: { params: ServiceParams, response: { 201: HookWithKey } },
      handler: async (req, reply) =>
        reply.code(201).send(hookBody(await deployHooks.rotate(await loadService(deps, req, req.params.serviceId)))),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/services/:serviceId/deploy-hook',
      summary: 'Turn the deploy hook off',
      tags: ['Deploys'],
      access: 'developer',
      audit: 'DeleteDeployHookEvent',
      schema: { params: ServiceParams, response: { 204: Type.Null() } },
      handler: async (req, reply) => {
        await deployHooks.remove(await loadService(deps, req, req.params.serviceId));
        return reply.code(204).send(null);
      },
    }),
  ];
}
