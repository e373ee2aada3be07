import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { IdParam, ListQuery, NoContent, splitList, StringList, listWindow } from '../schemas/common.js';
import {
  LogStreamSetting,
  LogStreamOverrideBody,
  logStreamOverrideBody,
  LogStreamOverrideInput,
  OwnerLogStreamBody,
  ownerLogStreamBody,
  OwnerLogStreamInput,
} from '../schemas/log-streams.js';
import { LOG_STREAM_SETTINGS } from '../../model/enums.js';

const TAGS = ['Logs'];
const OwnerParams = Type.Object({ ownerId: IdParam });
const ResourceParams = Type.Object({ resourceId: IdParam });

/**
 * Render's log stream routes: a workspace's syslog endpoint and per-resource overrides. Viewers read them (never the
 * token); admins change them, since they send every log line of the workspace elsewhere.
 */
export function logStreamRoutes(deps: HttpDeps) {
  const { guard, logStreams } = deps;
  /** The resource's workspace, 404 unless the caller may see it. */
  async function resourceWorkspace(req: FastifyRequest, resourceId: string) {
    const workspaceId = await logStreams.resourceWorkspace(resourceId);
    await guard.resource(req, workspaceId, 'resource');
    req.auditInfo.target = resourceId;
    return workspaceId;
  }
  const owner = (req: FastifyRequest, ownerId: string) => guard.owner(req, ownerId);

  return [
    defineRoute({
      method: 'GET',
      url: '/v1/logs/streams/owner/:ownerId',
      summary: "Retrieve a workspace's log stream (Render: get-owner-log-stream)",
      tags: TAGS,
      access: 'viewer',
      schema: { params: OwnerParams, response: { 200: OwnerLogStreamBody } },
      handler: async (req) => ownerLogStreamBody(await logStreams.getOwner(await owner(req, req.params.ownerId))),
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/logs/streams/owner/:ownerId',
      summary: "Create or update a workspace's log stream: its logs go to a TLS syslog endpoint (RFC 5424)",
      tags: TAGS,
      access: 'admin',
      audit: 'UpdateLogStreamEvent',
      schema: { params: OwnerParams, body: OwnerLogStreamInput, response: { 200: OwnerLogStreamBody } },
      handler: async (req) => {
        const { endpoint, token, preview } = req.body;
        const workspaceId = await owner(req, req.params.ownerId);
        return ownerLogStreamBody(await logStreams.putOwner(workspaceId, { endpoint, token, preview }));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/logs/streams/owner/:ownerId',
      summary: "Delete a workspace's log stream",
      tags: TAGS,
      access: 'admin',
      audit: 'DeleteLogStreamEvent',
      schema: { params: OwnerParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await logStreams.deleteOwner(await owner(req, req.params.ownerId));
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/logs/streams/resource',
      summary: 'List log stream overrides (Render: list-resource-log-streams), newest first',
      tags: TAGS,
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ownerId: StringList,
          logStreamId: StringList,
          resourceId: StringList,
          setting: Type.Optional(Type.Array(LogStreamSetting, { maxItems: LOG_STREAM_SETTINGS.length })),
          ...ListQuery,
        }),
        response: { 200: Type.Array(LogStreamOverrideBody) },
      },
      handler: async (req) => {
        const q = req.query;
        const { beforeId, limit } = listWindow(q);
        const rows = await logStreams.listOverrides({
          workspaceIds: await guard.listScope(req, splitList(q.ownerId)),
          ids: splitList(q.logStreamId),
          resourceIds: splitList(q.resourceId),
          settings: q.setting,
          beforeId,
          limit,
        });
        return rows.map(logStreamOverrideBody);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/logs/streams/resource/:resourceId',
      summary: "Retrieve a resource's log stream override (Render: get-resource-log-stream)",
      tags: TAGS,
      access: 'viewer',
      schema: { params: ResourceParams, response: { 200: LogStreamOverrideBody } },
      handler: async (req) => {
        await resourceWorkspace(req, req.params.resourceId);
        return logStreamOverrideBody(await logStreams.getOverride(req.params.resourceId));
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/logs/streams/resource/:resourceId',
      summary: "Create or update a service's or datastore's log stream override: its own endpoint, or drop its logs",
      tags: TAGS,
      access: 'admin',
      audit: 'UpdateLogStreamOverrideEvent',
      schema: { params: ResourceParams, body: LogStreamOverrideInput, response: { 200: LogStreamOverrideBody } },
      handler: async (req) => {
        const { resourceId } = req.params;
        const workspaceId = await resourceWorkspace(req, resourceId);
        const { endpoint, token, setting } = req.body;
        return logStreamOverrideBody(
          await logStreams.putOverride(workspaceId, resourceId, { endpoint, token, setting }),
        );
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/logs/streams/resource/:resourceId',
      summary: "Delete a resource's log stream override (its logs follow the workspace's stream again)",
      tags: TAGS,
      access: 'admin',
      audit: 'DeleteLogStreamOverrideEvent',
      schema: { params: ResourceParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await resourceWorkspace(req, req.params.resourceId);
        await logStreams.deleteOverride(req.params.resourceId);
        return reply.code(204).send(null);
      },
    }),
  ];
}
