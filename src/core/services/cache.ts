import { badRequest, conflict } from '../../lib/errors.js';
import type { ServiceRow } from '../../store/repos/services.js';

/**
 * Render's cache purge (POST /v1/services/:id/cache/purge) drops a web service's edge-cached responses "if caching is
 * enabled". Slipway's router caches no responses (docs/routing.md, "Caching"), and a static site's files are read
 * from its deploy's artifact at each request: there is never anything to purge, so a purge says so (409), as Render
 * answers for a service without caching, rather than pretend that it did something.
 */
export function purgeCache(service: ServiceRow): never {
  if (service.type !== 'web_service' && service.type !== 'static_site')
    throw badRequest('only web services and static sites are served through the router, and could have a cache');
  throw conflict(
    "caching is not enabled for this service: Slipway's router caches no responses, so there is nothing to purge " +
      '(a new deploy is served at once)',
  );
}
