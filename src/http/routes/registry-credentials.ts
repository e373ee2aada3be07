import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { IdParam, ListQuery, NoContent, splitList, StringList, TimeFilters, listWindow } from '../schemas/common.js';
import {
  REGISTRY_CREDENTIAL_BODY_LIMIT,
  RegistryCredentialBody,
  registryCredentialBody,
  RegistryCredentialInput,
} from '../schemas/registry-credentials.js';

const Params = Type.Object({ registryCredentialId: IdParam });
const TAGS = ['Registry credentials'];

/** Render's registry credential routes. Bodies never carry the token: viewers read them, developers change them. */
export function registryCredentialRoutes(deps: HttpDeps) {
  const { guard, registryCredentials } = deps;
  /** The credential, 404 unless the caller may see it (another workspace's is a 404). */
  async function load(req: FastifyRequest, id: string) {
    const credential = await registryCredentials.get(id);
    await guard.resource(req, credential.workspaceId, 'registry credential');
    req.auditInfo.target = credential.id;
    return credential;
  }

  return [
    defineRoute({
      method: 'POST',
      url: '/v1/registrycredentials',
      summary: 'Create a registry credential (its token is never returned)',
      tags: TAGS,
      access: 'developer',
      audit: 'CreateRegistryCredentialEvent',
      bodyLimit: REGISTRY_CREDENTIAL_BODY_LIMIT,
      schema: {
        body: Type.Object({
          ...RegistryCredentialInput,
          ownerId: Type.Optional(
            Type.String({ maxLength: 64, description: 'Workspace (tea-…); default: your default workspace' }),
          ),
        }),
        // Render answers a create with 200.
        response: { 200: RegistryCredentialBody },
      },
      handler: async (req) => {
        const { workspaceId } = await guard.context(req, req.body.ownerId);
        const { registry, name, username, authToken } = req.body;
        const created = await registryCredentials.create(workspaceId, { registry, name, username, authToken });
        req.auditInfo.target = created.id;
        return registryCredentialBody(created);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/registrycredentials',
      summary: 'List registry credentials, newest first (Render: a bare array of registryCredential)',
      tags: TAGS,
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ownerId: StringList,
          name: StringList,
          username: StringList,
          type: StringList,
          ...TimeFilters,
          ...ListQuery,
        }),
        response: { 200: Type.Array(RegistryCredentialBody) },
      },
      handler: async (req) => {
        const q = req.query;
        const rows = await registryCredentials.list({
          workspaceIds: await guard.listScope(req, splitList(q.ownerId)),
          // Names may hold commas: one per `name=`; usernames and types come comma-separated too, as Render sends them.
          name: q.name,
          username: splitList(q.username),
          registry: splitList(q.type),
          ...listWindow(q),
        });
        return rows.map(registryCredentialBody);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/registrycredentials/:registryCredentialId',
      summary: 'Retrieve a registry credential',
      tags: TAGS,
      access: 'viewer',
      schema: { params: Params, response: { 200: RegistryCredentialBody } },
      handler: async (req) => registryCredentialBody(await load(req, req.params.registryCredentialId)),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/registrycredentials/:registryCredentialId',
      summary: 'Update a registry credential (every field; services use it from their next deploy)',
      tags: TAGS,
      access: 'developer',
      audit: 'UpdateRegistryCredentialEvent',
      bodyLimit: REGISTRY_CREDENTIAL_BODY_LIMIT,
      schema: { params: Params, body: Type.Object(RegistryCredentialInput), response: { 200: RegistryCredentialBody } },
      handler: async (req) => {
        const credential = await load(req, req.params.registryCredentialId);
        const { registry, name, username, authToken } = req.body;
        return registryCredentialBody(
          await registryCredentials.update(credential, { registry, name, username, authToken }),
        );
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/registrycredentials/:registryCredentialId',
      summary: 'Delete a registry credential (409 while a service uses it)',
      tags: TAGS,
      access: 'developer',
      audit: 'DeleteRegistryCredentialEvent',
      schema: { params: Params, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await registryCredentials.remove(await load(req, req.params.registryCredentialId));
        return reply.code(204).send(null);
      },
    }),
  ];
}
