import { badRequest, conflict, notFound } from '../../lib/errors.js';
import { contentId } from '../../lib/ids.js';
import type { HeaderRule, RouteRule } from '../../model/static-rules.js';
import type { Transact } from '../../store/repos/index.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { Events } from '../events.js';
import { mergeDetails } from './details.js';

/** Render's `header`: a rule as the API shows it. */
export type Header = HeaderRule & { id: string };
/** Render's `route`: `priority` is its place in the order the router tries them, from 0. */
export type Route = RouteRule & { id: string; priority: number };
interface Rules {
  headers: HeaderRule[];
  routes: RouteRule[];
}
export interface HeaderFilter {
  path?: string[];
  name?: string[];
  value?: string[];
}
export interface RouteFilter {
  type?: string[];
  source?: string[];
  destination?: string[];
}

// Rules are stored in the service's details without ids (blueprints write them too); an id is what the rule is.
const headerOf = (h: HeaderRule): Header => ({
  id: contentId('headerRule', [h.path, h.name, h.value]),
  path: h.path,
  name: h.name,
  value: h.value,
});
const routeOf = (r: RouteRule, priority: number): Route => ({
  id: contentId('routeRule', [r.type, r.source, r.destination]),
  type: r.type,
  source: r.source,
  destination: r.destination,
  priority,
});
const headerRule = ({ path, name, value }: HeaderRule): HeaderRule => ({ path, name, value });
const routeRule = ({ type, source, destination }: RouteRule): RouteRule => ({ type, source, destination });

/** A filter list matches when it is absent or empty, or holds the value. */
const passes = (values: string[] | undefined, value: string) => !values?.length || values.includes(value);

function unique<T extends { id: string }>(items: T[], what: string): T[] {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item.id)) throw badRequest(`${what}[${i}] repeats an earlier rule`);
    seen.add(item.id);
  });
  return items;
}
function indexOf<T extends { id: string }>(items: T[], id: string, what: string): number {
  const i = items.findIndex((item) => item.id === id);
  if (i < 0) throw notFound(what);
  return i;
}

/**
 * A static site's header and redirect/rewrite rules (Render's `/headers` and `/routes`). Every change is made under the
 * service's row lock, checked as a PATCH of serviceDetails is, and reaches the router at once, without a deploy.
 */
export function createSiteRules(deps: {
  transact: Transact;
  events: Events;
  refreshRoute: (service: ServiceRow) => Promise<void>;
}) {
  const { transact, events } = deps;

  async function edit<T>(service: ServiceRow, change: (rules: Rules) => Partial<Rules> & { result: T }): Promise<T> {
    if (service.type !== 'static_site')
      throw badRequest('header and redirect/rewrite rules apply to static sites only');
    const { row, result } = await transact(async (tx) => {
      const current = await tx.services.lock(service.id);
      if (!current) throw notFound('service');
      const { result, ...next } = change({
        headers: current.details.headers ?? [],
        routes: current.details.routes ?? [],
      });
      const details = mergeDetails(current.type, next, current.details);
      const row = await tx.services.update(service.id, { details });
      if (!row) throw notFound('service');
      const fields = Object.keys(next);
      await events.record(
        { workspaceId: row.workspaceId, serviceId: row.id, type: 'service_updated', details: { fields } },
        tx.events,
      );
      return { row, result };
    });
    events.poke();
    await deps.refreshRoute(row);
    return result;
  }

  const headersOf = (service: ServiceRow) => (service.details.headers ?? []).map(headerOf);
  const routesOf = (service: ServiceRow) => (service.details.routes ?? []).map(routeOf);

  return {
    listHeaders: (service: ServiceRow, filter: HeaderFilter = {}) =>
      headersOf(service).filter(
        (h) => passes(filter.path, h.path) && passes(filter.name, h.name) && passes(filter.value, h.value),
      ),
    addHeader: (service: ServiceRow, input: HeaderRule) =>
      edit(service, ({ headers }) => {
        const added = headerOf(input);
        if (headers.some((h) => headerOf(h).id === added.id)) throw conflict('this header rule already exists');
        return { headers: [...headers, headerRule(input)], result: added };
      }),
    replaceHeaders: (service: ServiceRow, inputs: HeaderRule[]) =>
      edit(service, () => {
        const result = unique(inputs.map(headerOf), 'headers');
        return { headers: inputs.map(headerRule), result };
      }),
    removeHeader: (service: ServiceRow, id: string) =>
      edit(service, ({ headers }) => {
        const i = indexOf(headers.map(headerOf), id, 'header rule');
        return { headers: headers.filter((_, j) => j !== i), result: undefined };
      }),

    listRoutes: (service: ServiceRow, filter: RouteFilter = {}) =>
      routesOf(service).filter(
        (r) =>
          passes(filter.type, r.type) && passes(filter.source, r.source) && passes(filter.destination, r.destination),
      ),
    /** Adds a rule at `priority` (default: last); the rules from there on move down one. */
    addRoute: (service: ServiceRow, input: RouteRule & { priority?: number }) =>
      edit(service, ({ routes }) => {
        const id = routeOf(input, 0).id;
        if (routes.some((r, i) => routeOf(r, i).id === id)) throw conflict('this redirect/rewrite rule already exists');
        const at = Math.min(input.priority ?? routes.length, routes.length);
        const next = [...routes.slice(0, at), routeRule(input), ...routes.slice(at)];
        return { routes: next, result: routeOf(input, at) };
      }),
    replaceRoutes: (service: ServiceRow, inputs: RouteRule[]) =>
      edit(service, () => {
        const result = unique(inputs.map(routeOf), 'routes');
        return { routes: inputs.map(routeRule), result };
      }),
    /** Moves a rule to `priority` (past the end: last); the others keep their order around it. */
    moveRoute: (service: ServiceRow, id: string, priority: number) =>
      edit(service, ({ routes }) => {
        const from = indexOf(routes.map(routeOf), id, 'redirect/rewrite rule');
        const moved = routes[from]!;
        const rest = routes.filter((_, j) => j !== from);
        const at = Math.min(priority, rest.length);
        return { routes: [...rest.slice(0, at), moved, ...rest.slice(at)], result: routeOf(moved, at) };
      }),
    removeRoute: (service: ServiceRow, id: string) =>
      edit(service, ({ routes }) => {
        const i = indexOf(routes.map(routeOf), id, 'redirect/rewrite rule');
        return { routes: routes.filter((_, j) => j !== i), result: undefined };
      }),
  };
}
export type SiteRules = ReturnType<typeof createSiteRules>;
