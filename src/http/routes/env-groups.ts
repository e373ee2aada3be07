import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { readsSecrets } from '../../core/principal.js';
import type { EnvGroupRow } from '../../store/repos/env-groups.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { IdParam, ListQuery, Name, NoContent, StringList, TimeFilters, listWindow } from '../schemas/common.js';
import { EnvGroupBody, envGroupBody, EnvGroupMeta, envGroupMetaBody } from '../schemas/env-groups.js';
import {
  GroupFileParams,
  SECRET_FILE_BODY_LIMIT,
  SecretFileBody,
  SecretFileContentInput,
} from '../schemas/secret-files.js';
import { EnvVarBody, EnvVarInputArray, EnvVarValueInput } from '../schemas/services.js';

const GroupParams = Type.Object({ envGroupId: IdParam });
const KeyParams = Type.Object({ envGroupId: IdParam, envVarKey: Type.String({ minLength: 1, maxLength: 256 }) });
const LinkParams = Type.Object({ envGroupId: IdParam, serviceId: IdParam });
const EnvVar = EnvVarBody;

/** Env groups (Render's routes, plus PUT …/env-vars to replace the set). */
export function envGroupRoutes(deps: HttpDeps) {
  const { guard, envGroups } = deps;
  /** The group, 404 unless the caller may see it; `reveal`: its values unmasked for this caller (readsSecrets). */
  async function load(req: FastifyRequest, id: string) {
    const group = await envGroups.get(id);
    const { role } = await guard.resource(req, group.workspaceId, 'env group');
    req.auditInfo.target = group.id;
    return { group, reveal: readsSecrets(role) };
  }
  /** The group's body: values masked below admin, as in a service's resolved environment. */
  const body = async (group: EnvGroupRow, reveal: boolean) => envGroupBody(await envGroups.view(group, reveal));

  return [
    defineRoute({
      method: 'POST',
      url: '/v1/env-groups',
      summary: 'Create an env group (optionally linked to services)',
      tags: ['Env groups'],
      access: 'developer',
      audit: 'CreateEnvGroupEvent',
      schema: {
        body: Type.Object({
          name: Name,
          ownerId: Type.Optional(Type.String({ maxLength: 64 })),
          envVars: EnvVarInputArray,
          serviceIds: Type.Optional(Type.Array(IdParam, { maxItems: 100 })),
          environmentId: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        response: { 201: EnvGroupBody },
      },
      handler: async (req, reply) => {
        const { workspaceId, role } = await guard.context(req, req.body.ownerId);
        const group = await envGroups.create(workspaceId, req.body);
        req.auditInfo.target = group.id;
        return reply.code(201).send(await body(group, readsSecrets(role)));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/env-groups',
      summary: 'List env groups, newest first (Render: a bare array of envGroupMeta)',
      tags: ['Env groups'],
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ownerId: StringList,
          name: StringList,
          environmentId: StringList,
          ...TimeFilters,
          ...ListQuery,
        }),
        response: { 200: Type.Array(EnvGroupMeta) },
      },
      handler: async (req) => {
        const q = req.query;
        const workspaceIds = await guard.listScope(req, q.ownerId);
        const rows = await envGroups.list({
          workspaceIds,
          name: q.name,
          environmentId: q.environmentId,
          ...listWindow(q),
        });
        return Promise.all(
          rows.map(async (g) => ({
            ...envGroupMetaBody(await envGroups.metaView(g)),
            blueprint: g.manager ?? undefined,
          })),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/env-groups/:envGroupId',
      summary: 'Retrieve an env group with its variables (developers and up)',
      tags: ['Env groups'],
      access: 'developer',
      schema: { params: GroupParams, response: { 200: EnvGroupBody } },
      handler: async (req) => {
        const { group, reveal } = await load(req, req.params.envGroupId);
        return { ...(await body(group, reveal)), blueprint: await deps.blueprints.managerOf(group.id) };
      },
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/env-groups/:envGroupId',
      summary: 'Rename an env group',
      tags: ['Env groups'],
      access: 'developer',
      audit: 'UpdateEnvGroupEvent',
      schema: { params: GroupParams, body: Type.Object({ name: Name }), response: { 200: EnvGroupBody } },
      handler: async (req) => {
        const { group, reveal } = await load(req, req.params.envGroupId);
        return body(await envGroups.rename(group, req.body.name), reveal);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/env-groups/:envGroupId',
      summary: 'Delete an env group (unlinks it from its services)',
      tags: ['Env groups'],
      access: 'developer',
      audit: 'DeleteEnvGroupEvent',
      schema: { params: GroupParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await envGroups.remove((await load(req, req.params.envGroupId)).group);
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/env-groups/:envGroupId/env-vars',
      summary: "Replace all of an env group's variables",
      tags: ['Env groups'],
      access: 'developer',
      audit: 'UpdateEnvGroupEvent',
      schema: { params: GroupParams, body: EnvVarInputArray, response: { 200: EnvGroupBody } },
      handler: async (req) => {
        const { group, reveal } = await load(req, req.params.envGroupId);
        return body(await envGroups.replaceVars(group, req.body), reveal);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/env-groups/:envGroupId/env-vars/:envVarKey',
      summary: 'Retrieve one variable of an env group',
      tags: ['Env groups'],
      access: 'developer',
      schema: { params: KeyParams, response: { 200: EnvVar } },
      handler: async (req) => {
        const { group, reveal } = await load(req, req.params.envGroupId);
        return envGroups.getVar(group, req.params.envVarKey, reveal);
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/env-groups/:envGroupId/env-vars/:envVarKey',
      summary: 'Add or update one variable of an env group',
      tags: ['Env groups'],
      access: 'developer',
      audit: 'UpdateEnvGroupEvent',
      schema: {
        params: KeyParams,
        body: EnvVarValueInput,
        response: { 200: EnvGroupBody },
      },
      handler: async (req) => {
        const { group, reveal } = await load(req, req.params.envGroupId);
        const input = { key: req.params.envVarKey, ...req.body } as Parameters<typeof envGroups.putVar>[1];
        return body(await envGroups.putVar(group, input), reveal);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/env-groups/:envGroupId/env-vars/:envVarKey',
      summary: 'Delete one variable of an env group',
      tags: ['Env groups'],
      access: 'developer',
      audit: 'UpdateEnvGroupEvent',
      schema: { params: KeyParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await envGroups.deleteVar((await load(req, req.params.envGroupId)).group, req.params.envVarKey);
        return reply.code(204).send(null);
      },
    }),
    // Render's secret files of a group: shown and masked as its variables are (core/secret-files.ts).
    defineRoute({
      method: 'GET',
      url: '/v1/env-groups/:envGroupId/secret-files/:secretFileName',
      summary: 'Retrieve one secret file of an env group',
      tags: ['Env groups'],
      access: 'developer',
      schema: { params: GroupFileParams, response: { 200: SecretFileBody } },
      handler: async (req) => {
        const { group, reveal } = await load(req, req.params.envGroupId);
        return envGroups.getFile(group, req.params.secretFileName, reveal);
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/env-groups/:envGroupId/secret-files/:secretFileName',
      summary: 'Add or update one secret file of an env group',
      tags: ['Env groups'],
      access: 'developer',
      audit: 'UpdateEnvGroupEvent',
      bodyLimit: SECRET_FILE_BODY_LIMIT.one,
      schema: { params: GroupFileParams, body: SecretFileContentInput, response: { 200: EnvGroupBody } },
      handler: async (req) => {
        const { group, reveal } = await load(req, req.params.envGroupId);
        const file = { name: req.params.secretFileName, content: req.body.content };
        return body(await envGroups.putFile(group, file), reveal);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/env-groups/:envGroupId/secret-files/:secretFileName',
      summary: 'Delete one secret file of an env group',
      tags: ['Env groups'],
      access: 'developer',
      audit: 'UpdateEnvGroupEvent',
      schema: { params: GroupFileParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await envGroups.deleteFile((await load(req, req.params.envGroupId)).group, req.params.secretFileName);
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/env-groups/:envGroupId/services/:serviceId',
      summary: 'Link an env group to a service (applies on its next deploy or restart)',
      tags: ['Env groups'],
      access: 'developer',
      audit: 'LinkEnvGroupEvent',
      schema: { params: LinkParams, response: { 200: EnvGroupBody } },
      handler: async (req) => {
        const { group, reveal } = await load(req, req.params.envGroupId);
        return body(await envGroups.link(group, req.params.serviceId), reveal);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/env-groups/:envGroupId/services/:serviceId',
      summary: 'Unlink an env group from a service',
      tags: ['Env groups'],
      access: 'developer',
      audit: 'UnlinkEnvGroupEvent',
      schema: { params: LinkParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await envGroups.unlink((await load(req, req.params.envGroupId)).group, req.params.serviceId);
        return reply.code(204).send(null);
      },
    }),
  ];
}
