import { Type } from '@sinclair/typebox';
import type { HttpDeps } from '../deps.js';
import { eventListRoute } from '../helpers/event-list-route.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';
import { defineRoute } from '../route.js';
import { IdParam } from '../schemas/common.js';
import { EventBody, eventBody } from '../schemas/events.js';

export function eventRoutes(deps: HttpDeps) {
  return [
    eventListRoute(deps, {
      url: '/v1/services/:serviceId/events',
      tag: 'Services',
      params: ServiceParams,
      renderTypes: true,
      load: async (req) => ({
        serviceId: (await loadService(deps, req, (req.params as { serviceId: string }).serviceId)).id,
      }),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/events/:eventId',
      summary: "One event of a service or a datastore (Render's GET /events/{eventId})",
      tags: ['Services'],
      access: 'viewer',
      schema: { params: Type.Object({ eventId: IdParam }), response: { 200: EventBody } },
      handler: async (req) => {
        const { row, about } = await deps.events.get(req.params.eventId);
        await deps.guard.resource(req, row.workspaceId, 'event');
        return eventBody(row, about);
      },
    }),
  ];
}
