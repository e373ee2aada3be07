import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { envelope } from '../../lib/cursor.js';
import { SUSPENDED } from '../../model/enums.js';
import type { DatastoreKind, DatastoreRow } from '../../store/repos/datastores.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute, type RouteSpec } from '../route.js';
import { eventListRoute } from '../helpers/event-list-route.js';
import { renderDatastore } from '../helpers/render-datastore.js';
import {
  Envelope,
  IdParam,
  ListQuery,
  literalUnion,
  NoContent,
  StringList,
  TimeFilters,
  listWindow,
} from '../schemas/common.js';
import {
  connectionInfoBody,
  KeyValueBody,
  KeyValueConnectionInfo,
  KeyValuePATCH,
  KeyValuePOST,
  PostgresBody,
  RedisBody,
  RedisConnectionInfo,
  redisConnectionInfoBody,
  PostgresConnectionInfo,
  PostgresPATCH,
  PostgresPOST,
} from '../schemas/datastores.js';

interface Family {
  kind: DatastoreKind;
  /** `/v1/postgres`, `/v1/key-value` or `/v1/redis` (Render's deprecated name for key-value). */
  base: string;
  /** Path parameter and list envelope names (Render's). */
  param: 'postgresId' | 'keyValueId' | 'redisId';
  item: 'postgres' | 'keyValue' | 'redis';
  tag: string;
  /** Audit event infix, Render's: CreatePostgresEvent, CreateRedisEvent (key-value), ... */
  audit: string;
  post: TSchema;
  create(datastores: HttpDeps['datastores'], workspaceId: string, body: never): Promise<DatastoreRow>;
  body: TSchema;
  patch: TSchema;
  connectionInfo: TSchema;
  /** Render's connection-info body for this family (default: connectionInfoBody). */
  connectionBody?: (row: DatastoreRow, c: ReturnType<HttpDeps['datastores']['connection']>) => unknown;
}

/** The routes Postgres and key-value share: list, get, update, delete, suspend, resume, restart, connection-info. */
function familyRoutes(deps: HttpDeps, f: Family): RouteSpec[] {
  const { guard, datastores } = deps;
  const Params = Type.Object({ [f.param]: IdParam });
  const idOf = (req: FastifyRequest) => (req.params as Record<string, string>)[f.param]!;
  async function load(req: FastifyRequest): Promise<DatastoreRow> {
    const row = await datastores.get(f.kind, idOf(req));
    await guard.resource(req, row.workspaceId, f.item);
    req.auditInfo.target = row.id;
    return row;
  }
  const body = (row: DatastoreRow) => renderDatastore(deps, row);
  const action = (verb: 'suspend' | 'resume' | 'restart', summary: string) =>
    defineRoute({
      method: 'POST',
      url: `${f.base}/:${f.param}/${verb}`,
      summary,
      tags: [f.tag],
      access: 'developer',
      audit: `${verb[0]!.toUpperCase()}${verb.slice(1)}${f.audit}Event`,
      schema: { params: Params, response: { 202: NoContent } },
      handler: async (req, reply) => {
        await datastores[verb](await load(req));
        return reply.code(202).send(null);
      },
    });

  return [
    defineRoute({
      method: 'POST',
      url: f.base,
      summary: 'Create one: 201 with status creating, then available once it accepts connections',
      tags: [f.tag],
      access: 'developer',
      audit: `Create${f.audit}Event`,
      schema: { body: f.post, response: { 201: f.body } },
      handler: async (req, reply) => {
        const { workspaceId } = await guard.context(req, (req.body as { ownerId?: string }).ownerId);
        const row = await f.create(datastores, workspaceId, req.body as never);
        req.auditInfo.target = row.id;
        return reply.code(201).send(await body(row));
      },
    }),
    defineRoute({
      method: 'GET',
      url: f.base,
      summary: `List ${f.tag}, newest first`,
      tags: [f.tag],
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          ownerId: StringList,
          name: StringList,
          environmentId: StringList,
          region: StringList,
          suspended: Type.Optional(Type.Array(literalUnion(SUSPENDED), { maxItems: SUSPENDED.length })),
          ...TimeFilters,
          ...ListQuery,
        }),
        response: { 200: Envelope(f.item, f.body) },
      },
      handler: async (req) => {
        const q = req.query as Record<string, never>;
        const rows = await datastores.list({
          kind: f.kind,
          workspaceIds: await guard.listScope(req, q.ownerId),
          name: q.name,
          environmentId: q.environmentId,
          suspended: q.suspended,
          ...listWindow(q),
        });
        const owners = new Map();
        const projectsOf = new Map();
        const bodies = rows.map(async (row) => ({
          ...(await renderDatastore(deps, row, owners, projectsOf)),
          blueprint: row.manager ?? undefined,
        }));
        return envelope(f.item, await Promise.all(bodies));
      },
    }),
    defineRoute({
      method: 'GET',
      url: `${f.base}/:${f.param}`,
      summary: `Retrieve a ${f.item} instance`,
      tags: [f.tag],
      access: 'viewer',
      schema: { params: Params, response: { 200: f.body } },
      handler: async (req) => {
        const row = await load(req);
        return { ...(await body(row)), blueprint: await deps.blueprints.managerOf(row.id) };
      },
    }),
    defineRoute({
      method: 'PATCH',
      url: `${f.base}/:${f.param}`,
      summary: 'Update name, allow list, or plan (applied to the running server)',
      tags: [f.tag],
      access: 'developer',
      audit: `Update${f.audit}Event`,
      schema: { params: Params, body: f.patch, response: { 200: f.body } },
      handler: async (req) =>
        body(await datastores.update(await load(req), req.body as Parameters<typeof datastores.update>[1])),
    }),
    defineRoute({
      method: 'DELETE',
      url: `${f.base}/:${f.param}`,
      summary: 'Delete: stops the server and removes its data',
      tags: [f.tag],
      access: 'developer',
      audit: `Delete${f.audit}Event`,
      schema: { params: Params, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await datastores.remove(await load(req));
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'GET',
      url: `${f.base}/:${f.param}/connection-info`,
      summary: 'Connection strings and password (developers and up)',
      tags: [f.tag],
      access: 'developer',
      schema: { params: Params, response: { 200: f.connectionInfo } },
      handler: async (req) => {
        const row = await load(req);
        return (f.connectionBody ?? connectionInfoBody)(row, datastores.connection(row));
      },
    }),
    eventListRoute(deps, {
      url: `${f.base}/:${f.param}/events`,
      tag: f.tag,
      params: Params,
      load: async (req) => ({ datastoreId: (await load(req)).id }),
    }),
    action('suspend', 'Suspend: stops the server, keeps the data'),
    action('resume', 'Resume a suspended instance'),
    action('restart', 'Restart the server'),
  ];
}

/** Postgres and key-value datastores (Render's routes; docs/architecture.md, "Datastore servers"). */
export function datastoreRoutes(deps: HttpDeps): RouteSpec[] {
  const postgres: Family = {
    kind: 'postgres',
    base: '/v1/postgres',
    param: 'postgresId',
    item: 'postgres',
    tag: 'Postgres',
    audit: 'Postgres',
    post: PostgresPOST,
    create: (d, workspaceId, body) => d.createPostgres(workspaceId, body),
    body: PostgresBody,
    patch: PostgresPATCH,
    connectionInfo: PostgresConnectionInfo,
  };
  const keyValue: Family = {
    kind: 'keyValue',
    base: '/v1/key-value',
    param: 'keyValueId',
    item: 'keyValue',
    tag: 'Key Value',
    audit: 'Redis',
    post: KeyValuePOST,
    create: (d, workspaceId, body) => d.createKeyValue(workspaceId, body),
    body: KeyValueBody,
    patch: KeyValuePATCH,
    connectionInfo: KeyValueConnectionInfo,
  };
  // Render's deprecated `/v1/redis`: the key-value routes under its older name, with its body names (redisDetail,
  // redisCLICommand), only the operations Render has there, and deprecated in the OpenAPI document.
  const redis: Family = {
    ...keyValue,
    base: '/v1/redis',
    param: 'redisId',
    item: 'redis',
    tag: 'Redis (deprecated)',
    body: RedisBody,
    connectionInfo: RedisConnectionInfo,
    connectionBody: redisConnectionInfoBody,
  };
  const REDIS_OPERATIONS = new Set([
    'GET ',
    'POST ',
    'GET /:redisId',
    'PATCH /:redisId',
    'DELETE /:redisId',
    'GET /:redisId/connection-info',
  ]);
  const redisAliases = familyRoutes(deps, redis)
    .filter((r) => REDIS_OPERATIONS.has(`${r.method} ${r.url.slice(redis.base.length)}`))
    .map((r) => ({ ...r, deprecated: true }));
  return [...familyRoutes(deps, postgres), ...familyRoutes(deps, keyValue), ...redisAliases];
}
