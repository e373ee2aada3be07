import { Type, type TObject } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import type { EventsAbout } from '../../core/events.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, Envelope, ListQuery, Timestamp, toDate } from '../schemas/common.js';
import { EventBody, eventBody } from '../schemas/events.js';

/** `GET <url>`: the events of what `load` finds (after its access check), newest first. */
export function eventListRoute(
  deps: Pick<HttpDeps, 'events'>,
  opts: {
    url: string;
    tag: string;
    params: TObject;
    load(req: FastifyRequest): Promise<EventsAbout>;
    /** A service's list reads Render's types, Slipway's own when asked for (a datastore's are all Slipway's). */
    renderTypes?: boolean;
  },
) {
  return defineRoute({
    method: 'GET',
    url: opts.url,
    summary: 'List events, newest first',
    tags: [opts.tag],
    access: 'viewer',
    schema: {
      params: opts.params,
      querystring: Type.Object({
        type: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
        ...(opts.renderTypes
          ? {
              /** A service's own Slipway events (port_detected, certificate_issued, …) beside Render's types. */
              includeSlipwayEvents: Type.Optional(Type.Boolean()),
            }
          : {}),
        startTime: Type.Optional(Timestamp),
        endTime: Type.Optional(Timestamp),
        ...ListQuery,
      }),
      response: { 200: Envelope('event', EventBody) },
    },
    handler: async (req) => {
      const about = await opts.load(req);
      const q = req.query;
      const rows = await deps.events.list(about, {
        types: q.type,
        includeSlipwayEvents: (q as { includeSlipwayEvents?: boolean }).includeSlipwayEvents,
        startTime: toDate(q.startTime),
        endTime: toDate(q.endTime),
        beforeId: decodeCursor(q.cursor),
        limit: q.limit ?? DEFAULT_LIMIT,
      });
      return envelope(
        'event',
        rows.map((e) => eventBody(e, about)),
      );
    },
  });
}
