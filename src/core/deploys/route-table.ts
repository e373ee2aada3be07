import type { RouteTarget, Upstream } from '../../router/router.js';

/**
 * The router's view of the world, kept in memory and replaced atomically per service when
 * a deploy goes live, instances change, or a service is suspended. `resolve` runs per request.
 */
export function createRouteTable(appsDomain: string) {
  const bySlug = new Map<string, RouteTarget>();
  const suffix = `.${appsDomain.toLowerCase()}`;
  return {
    resolve(hostname: string): RouteTarget | undefined {
      if (!hostname.endsWith(suffix)) return undefined;
      return bySlug.get(hostname.slice(0, -suffix.length));
    },
    setInstances: (slug: string, serviceId: string, upstreams: Upstream[]) =>
      void bySlug.set(slug, { kind: 'instances', serviceId, upstreams }),
    setStatic: (slug: string, serviceId: string, root: string) =>
      void bySlug.set(slug, { kind: 'static', serviceId, root }),
    setSuspended: (slug: string, serviceId: string) => void bySlug.set(slug, { kind: 'suspended', serviceId }),
    remove: (slug: string) => bySlug.delete(slug),
    /** Takes an instance out of whatever routes to it, at once (its process just exited). */
    dropInstance(instanceId: string) {
      for (const [slug, target] of bySlug) {
        if (target.kind === 'instances' && target.upstreams.some((u) => u.instanceId === instanceId)) {
          bySlug.set(slug, { ...target, upstreams: target.upstreams.filter((u) => u.instanceId !== instanceId) });
        }
      }
    },
    get: (slug: string) => bySlug.get(slug),
  };
}
export type RouteTable = ReturnType<typeof createRouteTable>;
