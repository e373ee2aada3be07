import { Type } from '@sinclair/typebox';
import { decodeCursor, encodeCursor } from '../../lib/cursor.js';
import type { HttpDeps } from '../deps.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, IdParam, ListQuery, splitList, StringList } from '../schemas/common.js';
import {
  OverrideBody,
  OverrideListItem,
  OverridePatch,
  OwnerSettingsBody,
  OwnerSettingsPatch,
} from '../schemas/notifications.js';

const TAGS = ['Notification Settings'];
const OwnerParams = Type.Object({ ownerId: IdParam });

/** Render's notification settings (docs/notifications.md): a workspace's, and its services' overrides. */
export function notificationRoutes(deps: HttpDeps) {
  const { guard, notifications } = deps;
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/notification-settings/owners/:ownerId',
      summary: "Retrieve a workspace's notification settings",
      tags: TAGS,
      access: 'viewer',
      schema: { params: OwnerParams, response: { 200: OwnerSettingsBody } },
      handler: async (req) => {
        const { workspaceId } = await guard.resource(req, req.params.ownerId, 'workspace');
        return notifications.get(workspaceId);
      },
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/notification-settings/owners/:ownerId',
      summary: "Update a workspace's notification settings (Slipway: slackWebhookUrl sets its Slack webhook)",
      tags: TAGS,
      access: 'admin',
      audit: 'UpdateNotificationSettingsEvent',
      schema: { params: OwnerParams, body: OwnerSettingsPatch, response: { 200: OwnerSettingsBody } },
      handler: async (req) => {
        return notifications.update(await guard.owner(req, req.params.ownerId), req.body);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/notification-settings/overrides',
      summary: "List services' notification overrides (`default` where none was set), in service id order",
      tags: TAGS,
      access: 'viewer',
      schema: {
        querystring: Type.Object({ ownerId: StringList, serviceId: StringList, ...ListQuery }),
        response: { 200: Type.Array(OverrideListItem) },
      },
      handler: async (req) => {
        const workspaceIds = await guard.listScope(req, splitList(req.query.ownerId));
        const rows = await notifications.listOverrides({
          workspaceIds,
          serviceIds: splitList(req.query.serviceId),
          afterId: decodeCursor(req.query.cursor),
          limit: req.query.limit ?? DEFAULT_LIMIT,
        });
        return rows.map((o) => ({ cursor: encodeCursor(o.serviceId), override: { type: 'service' as const, ...o } }));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/notification-settings/overrides/services/:serviceId',
      summary: "Retrieve a service's notification override",
      tags: TAGS,
      access: 'viewer',
      schema: { params: ServiceParams, response: { 200: OverrideBody } },
      handler: async (req) => notifications.override((await loadService(deps, req, req.params.serviceId)).id),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/notification-settings/overrides/services/:serviceId',
      summary: "Update a service's notification override",
      tags: TAGS,
      access: 'developer',
      audit: 'UpdateNotificationOverrideEvent',
      schema: { params: ServiceParams, body: OverridePatch, response: { 200: OverrideBody } },
      handler: async (req) =>
        notifications.updateOverride(await loadService(deps, req, req.params.serviceId), req.body),
    }),
  ];
}
