import { Type } from '@sinclair/typebox';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { literalUnion, splitList, StringList } from '../schemas/common.js';

const TAGS = ['Maintenance'];
const STATES = ['scheduled', 'in_progress', 'user_fix_required', 'cancelled', 'succeeded', 'failed'] as const;
/** Render's maintenance run. */
const MaintenanceRun = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    scheduledAt: Type.String({ format: 'date-time' }),
    pendingMaintenanceBy: Type.Optional(Type.String({ format: 'date-time' })),
    state: literalUnion(STATES),
    resourceId: Type.String(),
  },
  { title: 'maintenanceRun' },
);

/**
 * Render's maintenance runs: windows Render schedules for work that restarts a resource (host or datastore upgrades),
 * which a user may move or start early. Slipway schedules none: certificates renew and processes are replaced with
 * no window to pick, and datastore versions are not upgraded in place. So the list is empty (for workspaces the
 * caller may read); the routes of one run are not served (a run id is a 404, as an unknown one is on Render).
 */
export function maintenanceRunRoutes(deps: HttpDeps) {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/maintenance',
      summary: 'List maintenance runs (Slipway schedules none: always empty)',
      tags: TAGS,
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          resourceId: StringList,
          ownerId: StringList,
          state: Type.Optional(Type.Array(literalUnion(STATES), { maxItems: STATES.length })),
        }),
        response: { 200: Type.Array(MaintenanceRun) },
      },
      handler: async (req) => {
        await deps.guard.listScope(req, splitList(req.query.ownerId)); // another workspace is a 404, as elsewhere
        return [];
      },
    }),
  ];
}
