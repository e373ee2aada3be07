import { Type } from '@sinclair/typebox';
import type { HttpDeps } from '../deps.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, ListQuery, NoContent } from '../schemas/common.js';
import {
  afterCursor,
  SECRET_FILE_BODY_LIMIT,
  SecretFileBody,
  SecretFileContentInput,
  SecretFileInputArray,
  SecretFileList,
  ServiceFileParams,
  withFileCursors,
} from '../schemas/secret-files.js';

/**
 * A service's own secret files (Render's routes; its env groups' are under /v1/env-groups). Shown to developers and
 * up as its own env var values are; contents sealed at rest, never logged (docs/deploys.md, "Secret files").
 */
export function secretFileRoutes(deps: HttpDeps) {
  const files = deps.secretFiles.service;
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/secret-files',
      summary: "List a service's secret files, by name (developers and up)",
      tags: ['Secret files'],
      access: 'developer',
      schema: {
        params: ServiceParams,
        querystring: Type.Object(ListQuery),
        response: { 200: SecretFileList },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const page = { after: afterCursor(req.query.cursor), limit: req.query.limit ?? DEFAULT_LIMIT };
        return withFileCursors(await files.list(service.id, page));
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/services/:serviceId/secret-files',
      summary: "Replace all of a service's secret files (applies from its next deploy or restart)",
      tags: ['Secret files'],
      access: 'developer',
      audit: 'UpdateSecretFilesEvent',
      bodyLimit: SECRET_FILE_BODY_LIMIT.all,
      schema: { params: ServiceParams, body: SecretFileInputArray, response: { 200: SecretFileList } },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        await files.replace(service.id, req.body);
        return withFileCursors(await files.list(service.id));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/secret-files/:secretFileName',
      summary: 'Retrieve one secret file of a service',
      tags: ['Secret files'],
      access: 'developer',
      schema: { params: ServiceFileParams, response: { 200: SecretFileBody } },
      handler: async (req) =>
        files.get((await loadService(deps, req, req.params.serviceId)).id, req.params.secretFileName),
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/services/:serviceId/secret-files/:secretFileName',
      summary: 'Add or update one secret file of a service (201, as Render answers)',
      tags: ['Secret files'],
      access: 'developer',
      audit: 'UpdateSecretFilesEvent',
      bodyLimit: SECRET_FILE_BODY_LIMIT.one,
      schema: { params: ServiceFileParams, body: SecretFileContentInput, response: { 201: SecretFileBody } },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const file = await files.put(service.id, { name: req.params.secretFileName, content: req.body.content });
        return reply.code(201).send(file);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/services/:serviceId/secret-files/:secretFileName',
      summary: 'Delete one secret file of a service',
      tags: ['Secret files'],
      access: 'developer',
      audit: 'DeleteSecretFilesEvent',
      schema: { params: ServiceFileParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await files.delete((await loadService(deps, req, req.params.serviceId)).id, req.params.secretFileName);
        return reply.code(204).send(null);
      },
    }),
  ];
}
