import { Type, type TSchema } from '@sinclair/typebox';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, IdParam, ListQuery, NoContent, splitList, StringList } from '../schemas/common.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';

const TAGS = ['Static sites'];
const HeaderInput = Type.Object({
  path: Type.String({ minLength: 1, maxLength: 1024, description: 'Paths it applies to; `*` matches the rest' }),
  name: Type.String({ minLength: 1, maxLength: 256 }),
  value: Type.String({ maxLength: 4096 }),
});
const Header = Type.Object({ id: Type.String(), ...HeaderInput.properties }, { title: 'header' });
const RouteType = Type.Union([Type.Literal('redirect'), Type.Literal('rewrite')]);
const RouteInput = Type.Object({
  type: RouteType,
  source: Type.String({ minLength: 1, maxLength: 1024, description: '`*` and `:name` capture parts of the path' }),
  destination: Type.String({ minLength: 1, maxLength: 2048, description: 'A path or URL; `*`/`:splat` and `:name`' }),
});
const Priority = Type.Integer({ minimum: 0, maximum: 1000, description: 'Place in the order rules are tried, from 0' });
const Route = Type.Object({ id: Type.String(), ...RouteInput.properties, priority: Priority }, { title: 'route' });
const List = <T extends TSchema>(item: T) => Type.Array(item, { maxItems: 100 });

/** One page of an ordered list (rules are few and kept in order, not by id): the items after the cursor's. */
function page<T extends { id: string }>(items: T[], query: { cursor?: string; limit?: number }): T[] {
  const after = decodeCursor(query.cursor);
  const start = after === undefined ? 0 : items.findIndex((item) => item.id === after) + 1;
  if (start === 0 && after !== undefined) return []; // that rule is gone: nothing is known to come after it
  return items.slice(start, start + (query.limit ?? DEFAULT_LIMIT));
}

/** Render's `/headers` and `/routes` of a static site: what its responses carry, and its redirects and rewrites. */
export function siteRuleRoutes(deps: HttpDeps) {
  const { rules } = deps.services;
  const ruleParams = <K extends string>(key: K) =>
    Type.Object({ serviceId: IdParam, [key]: IdParam } as { serviceId: typeof IdParam } & Record<K, typeof IdParam>);
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/headers',
      summary: "List a static site's header rules",
      tags: TAGS,
      access: 'viewer',
      schema: {
        params: ServiceParams,
        querystring: Type.Object({ path: StringList, name: StringList, value: StringList, ...ListQuery }),
        response: { 200: Type.Array(Type.Object({ cursor: Type.String(), header: Header })) },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const q = req.query;
        const filter = { path: splitList(q.path), name: splitList(q.name), value: splitList(q.value) };
        return envelope('header', page(rules.listHeaders(service, filter), q));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/headers',
      summary: 'Add a header rule; it applies at once, without a deploy',
      tags: TAGS,
      access: 'developer',
      audit: 'AddHeaderRuleEvent',
      schema: { params: ServiceParams, body: HeaderInput, response: { 201: Type.Object({ headers: Header }) } },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        return reply.code(201).send({ headers: await rules.addHeader(service, req.body) });
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/services/:serviceId/headers',
      summary: 'Replace all header rules',
      tags: TAGS,
      access: 'developer',
      audit: 'ReplaceHeaderRulesEvent',
      schema: { params: ServiceParams, body: List(HeaderInput), response: { 200: Type.Array(Header) } },
      handler: async (req) => rules.replaceHeaders(await loadService(deps, req, req.params.serviceId), req.body),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/services/:serviceId/headers/:headerId',
      summary: 'Delete a header rule',
      tags: TAGS,
      access: 'developer',
      audit: 'DeleteHeaderRuleEvent',
      schema: { params: ruleParams('headerId'), response: { 204: NoContent } },
      handler: async (req, reply) => {
        await rules.removeHeader(await loadService(deps, req, req.params.serviceId), req.params.headerId);
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/routes',
      summary: "List a static site's redirect and rewrite rules, in priority order",
      tags: TAGS,
      access: 'viewer',
      schema: {
        params: ServiceParams,
        querystring: Type.Object({ type: StringList, source: StringList, destination: StringList, ...ListQuery }),
        response: { 200: Type.Array(Type.Object({ cursor: Type.String(), route: Route })) },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const q = req.query;
        const filter = { type: splitList(q.type), source: splitList(q.source), destination: splitList(q.destination) };
        return envelope('route', page(rules.listRoutes(service, filter), q));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/routes',
      summary: 'Add a redirect or rewrite rule at `priority` (default: last)',
      tags: TAGS,
      access: 'developer',
      audit: 'AddRouteRuleEvent',
      schema: {
        params: ServiceParams,
        body: Type.Object({ ...RouteInput.properties, priority: Type.Optional(Priority) }),
        response: { 201: Route },
      },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        return reply.code(201).send(await rules.addRoute(service, req.body));
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/services/:serviceId/routes',
      summary: 'Replace all redirect and rewrite rules (their order is their priority)',
      tags: TAGS,
      access: 'developer',
      audit: 'ReplaceRouteRulesEvent',
      schema: { params: ServiceParams, body: List(RouteInput), response: { 200: Type.Array(Route) } },
      handler: async (req) => rules.replaceRoutes(await loadService(deps, req, req.params.serviceId), req.body),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/services/:serviceId/routes',
      summary: "Move a rule to `priority` (Render's body names no rule: Slipway takes its `id` beside it)",
      tags: TAGS,
      access: 'developer',
      audit: 'UpdateRouteRulePriorityEvent',
      schema: {
        params: ServiceParams,
        body: Type.Object({ id: IdParam, priority: Priority }),
        // `headers` is the key Render's description gives this response.
        response: { 200: Type.Object({ headers: Route }) },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        return { headers: await rules.moveRoute(service, req.body.id, req.body.priority) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/services/:serviceId/routes/:routeId',
      summary: 'Delete a redirect or rewrite rule',
      tags: TAGS,
      access: 'developer',
      audit: 'DeleteRouteRuleEvent',
      schema: { params: ruleParams('routeId'), response: { 204: NoContent } },
      handler: async (req, reply) => {
        await rules.removeRoute(await loadService(deps, req, req.params.serviceId), req.params.routeId);
        return reply.code(204).send(null);
      },
    }),
  ];
}
