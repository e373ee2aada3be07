import type { RouteTarget, Upstream } from '../../router/router.js';
import { compileRules, type StaticRules } from '../../router/static-rules.js';

/**
 * The router's view of the world, kept in memory and replaced atomically per service when
 * a deploy goes live, instances change, or a service is suspended. `resolve` runs per request.
 */
export function createRouteTable(appsDomain: string) {
  const bySlug = new Map<string, RouteTarget>();
  /** Verified custom domains: the service's slug, or (a www./apex twin) the name it redirects to. */
  let domains = new Map<string, { slug: string; redirectTo?: string }>();
  const suffix = `.${appsDomain.toLowerCase()}`;
  /**
   * A data plane outside this process (nginx) that must take every change: `changed` schedules its update, `applied`
   * resolves once the last change serves (undefined: the in-process router reads the table per request).
   */
  let plane: { changed(): void; applied(): Promise<void> } | undefined;
  const changed = () => plane?.changed();
  const setSlug = (slug: string, target: RouteTarget) => (bySlug.set(slug, target), changed());
  return {
    attach(dataPlane: NonNullable<typeof plane>) {
      plane = dataPlane;
    },
    /** Resolves once the data plane serves every change made so far (a roll-over stops old instances after it). */
    applied: () => plane?.applied() ?? Promise.resolve(),
    /** Every name the table routes, for a data plane that renders them all: each slug's apps-domain host and custom domains. */
    snapshot(): Array<{ slug: string; names: string[]; target: RouteTarget }> {
      const names = new Map<string, string[]>();
      for (const [name, d] of domains) if (!d.redirectTo) names.set(d.slug, [...(names.get(d.slug) ?? []), name]);
      return [...bySlug].map(([slug, target]) => ({
        slug,
        names: [`${slug}${suffix}`, ...(names.get(slug) ?? [])],
        target,
      }));
    },
    resolve(hostname: string): RouteTarget | undefined {
      if (hostname.endsWith(suffix)) return bySlug.get(hostname.slice(0, -suffix.length));
      const domain = domains.get(hostname);
      if (!domain) return undefined;
      if (domain.redirectTo) return { kind: 'redirect', to: domain.redirectTo };
      return bySlug.get(domain.slug);
    },
    /** Replaces the custom domains at once (core/domains: after a check changed one, or a deletion). */
    setDomains(rows: Array<{ name: string; slug: string; redirectForName: string | null }>) {
      const next = new Map(
        rows.map((r) => [r.name, { slug: r.slug, ...(r.redirectForName ? { redirectTo: r.redirectForName } : {}) }]),
      );
      // Every background pass sets them again: only a real change reaches the data plane (a render, perhaps a reload).
      const same =
        next.size === domains.size &&
        [...next].every(
          ([name, d]) => domains.get(name)?.slug === d.slug && domains.get(name)?.redirectTo === d.redirectTo,
        );
      domains = next;
      if (!same) changed();
    },
    setInstances: (slug: string, serviceId: string, upstreams: Upstream[]) =>
      setSlug(slug, { kind: 'instances', serviceId, upstreams }),
    /** A static site's files, with its header and route rules compiled once here, not per request. */
    setStatic: (slug: string, serviceId: string, root: string, rules?: StaticRules) =>
      setSlug(slug, {
        kind: 'static',
        serviceId,
        root,
        ...(rules && (rules.headers.length || rules.routes.length) ? { rules: compileRules(rules) } : {}),
      }),
    setSuspended: (slug: string, serviceId: string) => setSlug(slug, { kind: 'suspended', serviceId }),
    remove: (slug: string) => void (bySlug.delete(slug) && changed()),
    /** Takes an instance out of whatever routes to it, at once (its process just exited). */
    dropInstance(instanceId: string) {
      for (const [slug, target] of bySlug) {
        if (target.kind === 'instances' && target.upstreams.some((u) => u.instanceId === instanceId)) {
          setSlug(slug, { ...target, upstreams: target.upstreams.filter((u) => u.instanceId !== instanceId) });
        }
      }
    },
    get: (slug: string) => bySlug.get(slug),
  };
}
export type RouteTable = ReturnType<typeof createRouteTable>;
