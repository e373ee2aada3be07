import { Type } from '@sinclair/typebox';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, Envelope, ListQuery, Timestamp, toDate } from '../schemas/common.js';
import { loadService, ServiceParams } from './services.js';

/** Render's service event: every transition of a service and its deploys (DESIGN.md §7). */
const EventBody = Type.Object(
  { id: Type.String(), timestamp: Timestamp, serviceId: Type.String(), type: Type.String(), details: Type.Record(Type.String(), Type.Unknown()) },
  { title: 'serviceEvent' },
);

export function eventRoutes(deps: HttpDeps) {
  return [
    defineRoute({
      method: 'GET', url: '/v1/services/:serviceId/events', summary: 'List a service\'s events, newest first', tags: ['Services'],
      access: 'viewer',
      schema: {
        params: ServiceParams,
        querystring: Type.Object({
          type: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
          startTime: Type.Optional(Timestamp), endTime: Type.Optional(Timestamp), ...ListQuery,
        }),
        response: { 200: Envelope('event', EventBody) },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const q = req.query;
        const rows = await deps.repos.events.list(service.id, {
          types: q.type, startTime: toDate(q.startTime), endTime: toDate(q.endTime),
          beforeId: decodeCursor(q.cursor), limit: q.limit ?? DEFAULT_LIMIT,
        });
        return envelope('event', rows.map((e) => ({
          id: e.id, timestamp: e.createdAt.toISOString(), serviceId: service.id, type: e.type,
          details: { ...(e.details as Record<string, unknown>), ...(e.deployId ? { deployId: e.deployId } : {}) },
        })));
      },
    }),
  ];
}
