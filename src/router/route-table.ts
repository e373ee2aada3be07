import type { RouteTarget, Upstream } from './types.js';
import type { StaticRules } from '../model/static-rules.js';
import { compileRules, type CompiledRules } from './static-rules.js';

type DomainRow = { name: string; slug: string; redirectForName: string | null };
/** The table as data, for a router in another process (router/daemon/): static rules as written, not compiled. */
export interface RouteState {
  targets: Array<{
    slug: string;
    target:
      | Exclude<RouteTarget, { kind: 'static' }>
      | { kind: 'static'; serviceId: string; root: string; rules?: StaticRules };
  }>;
  domains: DomainRow[];
}

/**
 * The router's view of the world, kept in memory and replaced atomically per service when
 * a deploy goes live, instances change, or a service is suspended. `resolve` runs per request.
 */
export function createRouteTable(appsDomain: string) {
  const bySlug = new Map<string, RouteTarget>();
  /** Verified custom domains: the service's slug, or (a www./apex twin) the name it redirects to. */
  let domains = new Map<string, { slug: string; redirectTo?: string }>();
  let domainRows: DomainRow[] = [];
  /** Static sites' rules as written (compiled ones, with their RE2 patterns, cannot be sent to another process). */
  const staticRules = new Map<string, StaticRules>();
  const suffix = `.${appsDomain.toLowerCase()}`;
  /**
   * Data planes outside this process (nginx, the router process) that must take every change: `changed` schedules
   * their update, `applied` resolves once the last change serves (none: a router in this process reads the table).
   */
  const planes: Array<{ changed(): void; applied(): Promise<void> }> = [];
  const changed = () => planes.forEach((plane) => plane.changed());
  const setSlug = (slug: string, target: RouteTarget) => {
    if (target.kind !== 'static') staticRules.delete(slug);
    bySlug.set(slug, target);
    changed();
  };
  const table = {
    attach(dataPlane: (typeof planes)[number]) {
      planes.push(dataPlane);
    },
    /** Resolves once the data planes serve every change made so far (a roll-over stops old instances after it). */
    applied: async () => void (await Promise.all(planes.map((plane) => plane.applied()))),
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
    setDomains(rows: DomainRow[]) {
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
      domainRows = rows.map((r) => ({ name: r.name, slug: r.slug, redirectForName: r.redirectForName }));
      if (!same) changed();
    },
    setInstances: (slug: string, serviceId: string, upstreams: Upstream[]) =>
      setSlug(slug, { kind: 'instances', serviceId, upstreams }),
    /** A static site's files, with its header and route rules compiled once here, not per request. */
    setStatic(slug: string, serviceId: string, root: string, rules?: StaticRules) {
      const some = rules && (rules.headers.length || rules.routes.length) ? rules : undefined;
      if (some)
        staticRules.set(slug, some); // before setSlug: a data plane may read the state at once
      else staticRules.delete(slug);
      setSlug(slug, { kind: 'static', serviceId, root, ...(some ? { rules: compileRules(some) } : {}) });
    },
    setSuspended: (slug: string, serviceId: string) => setSlug(slug, { kind: 'suspended', serviceId }),
    /** Maintenance mode: the router answers for the service (its instances keep running); `uri` '' is the default page. */
    setMaintenance: (slug: string, serviceId: string, uri: string) =>
      setSlug(slug, { kind: 'maintenance', serviceId, uri }),
    remove: (slug: string) => void (staticRules.delete(slug), bySlug.delete(slug) && changed()),
    /** Takes an instance out of whatever routes to it, at once (its process just exited). */
    dropInstance(instanceId: string) {
      for (const [slug, target] of bySlug) {
        if (target.kind === 'instances' && target.upstreams.some((u) => u.instanceId === instanceId)) {
          setSlug(slug, { ...target, upstreams: target.upstreams.filter((u) => u.instanceId !== instanceId) });
        }
      }
    },
    get: (slug: string) => bySlug.get(slug),
    exportState: (): RouteState => ({
      targets: [...bySlug].map(([slug, target]) => ({
        slug,
        target:
          target.kind === 'static'
            ? { kind: 'static', serviceId: target.serviceId, root: target.root, rules: staticRules.get(slug) }
            : target,
      })),
      domains: domainRows,
    }),
    /** Replaces everything with `state` (a router process loading what the API sent). */
    importState(state: RouteState) {
      // Every update carries the whole table: rules that did not change keep their compiled form (RE2 compiles cost).
      const compiled = new Map<string, { text: string; rules: CompiledRules }>();
      for (const [slug, rules] of staticRules) {
        const target = bySlug.get(slug);
        if (target?.kind === 'static' && target.rules)
          compiled.set(slug, { text: JSON.stringify(rules), rules: target.rules });
      }
      bySlug.clear();
      staticRules.clear();
      for (const { slug, target } of state.targets) {
        const kept = target.kind === 'static' && target.rules ? compiled.get(slug) : undefined;
        if (target.kind !== 'static') setSlug(slug, target);
        else if (!kept || kept.text !== JSON.stringify(target.rules))
          table.setStatic(slug, target.serviceId, target.root, target.rules);
        else {
          staticRules.set(slug, target.rules!);
          setSlug(slug, { kind: 'static', serviceId: target.serviceId, root: target.root, rules: kept.rules });
        }
      }
      table.setDomains(state.domains);
    },
  };
  return table;
}
export type RouteTable = ReturnType<typeof createRouteTable>;
