import { Type } from '@sinclair/typebox';
import { readsSecrets } from '../../core/principal.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { IdParam, NoContent } from '../schemas/common.js';
import { EnvVarBody, EnvVarInputArray, EnvVarValueInput } from '../schemas/services.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';

const EnvVar = EnvVarBody;
const EnvVarList = Type.Array(
  Type.Object({
    envVar: EnvVar,
    cursor: Type.String(),
    source: Type.Optional(Type.String({ description: 'with resolved=true: platform, envGroup:<id> or service' })),
  }),
);
const KeyParams = Type.Object({ serviceId: IdParam, envVarKey: Type.String({ minLength: 1, maxLength: 256 }) });
const withCursors = (vars: Array<{ key: string; value: string }>) =>
  vars.map((envVar) => ({ envVar, cursor: Buffer.from(envVar.key).toString('base64url') }));

/** A service's own variables (values sealed at rest) and the platform's (docs/architecture.md, "Platform environment"). */
export function envVarRoutes(deps: HttpDeps) {
  const { envVars, envView } = deps;
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/env-vars',
      summary:
        "List a service's environment variables (developers and up); `resolved=true`: everything the app sees, each with its source",
      tags: ['Env vars'],
      access: 'developer',
      schema: {
        params: ServiceParams,
        querystring: Type.Object({ resolved: Type.Optional(Type.Boolean()) }),
        response: { 200: EnvVarList },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        if (!req.query.resolved) return withCursors(await envVars.list(service.id));
        // Group and service values are secrets: shown to admins and owners, masked for developers.
        const { role } = await deps.guard.resource(req, service.workspaceId, 'service');
        const resolved = await envView.resolved(service, readsSecrets(role));
        return resolved.map(({ key, value, source }) => ({ ...withCursors([{ key, value }])[0]!, source }));
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/services/:serviceId/env-vars',
      summary: "Replace all of a service's environment variables",
      tags: ['Env vars'],
      access: 'developer',
      audit: 'UpdateEnvVarsEvent',
      schema: { params: ServiceParams, body: EnvVarInputArray, response: { 200: EnvVarList } },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        await envVars.replace(service, req.body);
        return withCursors(await envVars.list(service.id));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/env-vars/:envVarKey',
      summary: 'Retrieve one environment variable',
      tags: ['Env vars'],
      access: 'developer',
      schema: { params: KeyParams, response: { 200: EnvVar } },
      handler: async (req) =>
        envVars.get((await loadService(deps, req, req.params.serviceId)).id, req.params.envVarKey),
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/services/:serviceId/env-vars/:envVarKey',
      summary: 'Add or update one environment variable',
      tags: ['Env vars'],
      access: 'developer',
      audit: 'UpdateEnvVarsEvent',
      schema: {
        params: KeyParams,
        body: EnvVarValueInput,
        response: { 200: EnvVar },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        return envVars.put(service, { key: req.params.envVarKey, ...req.body } as Parameters<typeof envVars.put>[1]);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/services/:serviceId/env-vars/:envVarKey',
      summary: 'Delete one environment variable',
      tags: ['Env vars'],
      access: 'developer',
      audit: 'DeleteEnvVarsEvent',
      schema: { params: KeyParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await envVars.delete((await loadService(deps, req, req.params.serviceId)).id, req.params.envVarKey);
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/platform-env',
      summary: 'The variables Slipway injects into every instance',
      tags: ['Env vars'],
      access: 'viewer',
      schema: {
        params: ServiceParams,
        response: {
          200: Type.Array(
            Type.Object({
              key: Type.String(),
              value: Type.Union([Type.String(), Type.Null()]),
              perInstance: Type.Boolean(),
            }),
          ),
        },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        return envView.platform(service);
      },
    }),
  ];
}
