import { Type } from '@sinclair/typebox';
import { badRequest } from '../../lib/errors.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { defineRoute } from '../route.js';
import { OwnerIdQuery, Timestamp } from '../schemas/common.js';

const ByPlan = Type.Record(Type.String(), Type.Number(), { description: 'The same figure split by plan' });
const Figures = {
  instanceHours: Type.Number({ description: 'Instance running time, in hours' }),
  instanceHoursByPlan: ByPlan,
  buildMinutes: Type.Number({ description: 'Build time, in minutes' }),
  buildMinutesByPlan: ByPlan,
  bandwidthBytes: Type.Number({ description: 'Response bytes served by the router (headers included)' }),
  bandwidthGB: Type.Number({ description: 'bandwidthBytes in decimal gigabytes (10^9 bytes)' }),
  datastoreHours: Type.Number({ description: 'Postgres and key-value time while not suspended, in hours' }),
  datastoreHoursByPlan: ByPlan,
  diskBytes: Type.Number({
    description:
      "Services' disk use now, whatever the period: artifacts and uploads (hard links once) and build disks; each service's budget is SLIPWAY_SERVICE_DISK_MB",
  }),
};
const UsageBody = Type.Object(
  {
    startTime: Timestamp,
    endTime: Timestamp,
    totals: Type.Object(Figures, { description: 'Everything in this answer' }),
    workspaces: Type.Array(Type.Object({ ownerId: Type.String(), ...Figures })),
    resources: Type.Array(
      Type.Object({
        resourceId: Type.String({ description: 'The service (srv-…), Postgres (dpg-…) or key-value (red-…) billed' }),
        ownerId: Type.String(),
        type: Type.Union([Type.Literal('service'), Type.Literal('postgres'), Type.Literal('key_value')]),
        name: Type.Optional(Type.String({ description: 'Absent once the resource is deleted' })),
        ...Figures,
      }),
    ),
  },
  { title: 'usage' },
);

/** The start of the UTC calendar month of `at`: the default period is the month so far. */
const monthStart = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));

export function usageRoutes({ guard, usage }: HttpDeps) {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/usage',
      summary: 'Usage totals for a period, per workspace and per resource',
      tags: ['Usage'],
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ownerId: OwnerIdQuery,
          startTime: Type.Optional({ ...Timestamp, description: "Default: the start of endTime's UTC month" }),
          endTime: Type.Optional({ ...Timestamp, description: 'Default: now' }),
        }),
        response: { 200: UsageBody },
      },
      handler: async (req) => {
        const { ownerId } = req.query;
        // The operator without ownerId sees every workspace.
        const workspaceIds =
          principalOf(req).kind === 'operator' && !ownerId
            ? undefined
            : [(await guard.context(req, ownerId)).workspaceId];
        const end = req.query.endTime ? new Date(req.query.endTime) : new Date();
        const start = req.query.startTime ? new Date(req.query.startTime) : monthStart(end);
        if (!(start < end)) throw badRequest('startTime must be before endTime');
        return usage.report({ workspaceIds, start, end });
      },
    }),
  ];
}
