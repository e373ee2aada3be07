import type { HttpDeps } from '../deps.js';
import { eventListRoute } from '../helpers/event-list-route.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';

export function eventRoutes(deps: HttpDeps) {
  return [
    eventListRoute(deps, {
      url: '/v1/services/:serviceId/events',
      tag: 'Services',
      params: ServiceParams,
      load: async (req) => ({
        serviceId: (await loadService(deps, req, (req.params as { serviceId: string }).serviceId)).id,
      }),
    }),
  ];
}
