import { Type, type TProperties } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { AppError, badRequest, notFound } from '../../lib/errors.js';
import { keyValueSize, postgresSize } from '../../core/datastores/plans.js';
import type { DatastoreRow } from '../../store/repos/datastores.js';
import {
  METRIC_NAMES,
  type FamilyQuery,
  type MetricName,
  type MetricResource,
} from '../../observability/metrics/family.js';
import type { HttpDeps } from '../deps.js';
import { loadService } from '../helpers/load-service.js';
import { defineRoute } from '../route.js';
import { literalUnion } from '../schemas/common.js';
import { Aggregation, Instances, Range, RelativeTo, SeriesBody, Source } from './metrics.js';

const Ids = (description: string) =>
  Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 10, description }));
const Strings = (description: string, maxLength = 255) =>
  Type.Optional(Type.Array(Type.String({ maxLength }), { maxItems: 20, description }));
const Resources = {
  resource: Ids('Service, Postgres or key-value ids, repeated or comma-separated; each must be in your workspace'),
  service: Ids('Deprecated (Render): resource'),
  ...Range,
};
const HttpFilters = {
  host: Strings('Only requests to these hosts'),
  path: Strings('Only requests to these paths (grouped as stored: `/users/42` is `/users/*`)', 2048),
  statusCode: Strings('Only requests answered with these status codes', 3),
};
const AggregateBy = (values: readonly string[]) =>
  Type.Optional(literalUnion(values, { description: 'One series per value of this label' }));

/** Render's GET /metrics/bandwidth-sources body. */
const BandwidthSources = Type.Object(
  {
    data: Type.Array(
      Type.Object({
        labels: Type.Object({ resource: Type.String(), trafficSource: literalUnion(['total']) }),
        values: Type.Array(Type.Object({ timestamp: Type.Integer(), value: Type.Number() })),
      }),
    ),
  },
  { title: 'bandwidthSources' },
);

/** What each operation accepts beyond the resources and the range (Render's parameters). */
const PARAMS: Record<MetricName, TProperties> = {
  cpu: { instance: Instances, aggregationMethod: Type.Optional(Aggregation), relativeTo: RelativeTo },
  memory: { instance: Instances, aggregationMethod: Type.Optional(Aggregation), source: Source },
  'cpu-limit': { instance: Instances },
  'cpu-target': { instance: Instances },
  'memory-limit': { instance: Instances },
  'memory-target': { instance: Instances },
  'http-requests': {
    ...HttpFilters,
    aggregateBy: AggregateBy(['statusCode', 'host']),
    aggregateHttpRequestCountsBy: AggregateBy(['statusCode', 'host']),
  },
  'http-latency': {
    ...HttpFilters,
    quantile: Type.Optional(
      Type.Array(Type.Number({ exclusiveMinimum: 0, maximum: 1 }), {
        maxItems: 10,
        description: 'Quantiles to answer (0.5, 0.95, 0.99…); default 0.95',
      }),
    ),
  },
  bandwidth: {},
  'disk-usage': {},
  'disk-capacity': {},
  'instance-count': {},
  'active-connections': {},
  'replication-lag': {},
  'task-runs-queued': {},
  'task-runs-completed': {
    state: Type.Optional(Type.Array(literalUnion(['succeeded', 'failed']), { maxItems: 2 })),
    aggregateBy: AggregateBy(['state']),
  },
};

const SUMMARIES: Record<MetricName, string> = {
  cpu: 'CPU of resources (percent of one core)',
  memory: 'Memory of resources (bytes)',
  'cpu-limit': "The plan's CPU limit (percent of one core)",
  'cpu-target': "Autoscaling's CPU target (percent of one core); empty without it",
  'memory-limit': "The plan's memory limit (bytes)",
  'memory-target': "Autoscaling's memory target (bytes); empty without it",
  'http-requests': 'Requests through the router, by status code or host',
  'http-latency': "Quantiles of the router's response times (ms)",
  bandwidth: 'Bytes the router sent for services',
  'disk-usage': "A service's disk use now (artifacts, uploads, build disk)",
  'disk-capacity': "A service's disk budget (SLIPWAY_SERVICE_DISK_MB)",
  'instance-count': "A service's running instances over time",
  'active-connections': "A Postgres datastore's client connections now (no history); empty for key-value",
  'replication-lag': 'No replicas here: always empty',
  'task-runs-queued': 'No tasks here: always empty',
  'task-runs-completed': 'No tasks here: always empty',
};

/** Each `resource` (and deprecated `service`), split at commas, checked: 404 for one the caller may not read. */
async function resourcesOf(deps: HttpDeps, req: FastifyRequest, name?: MetricName): Promise<MetricResource[]> {
  const q = req.query as { resource?: string[]; service?: string[] };
  const ids = [
    ...new Set(
      [...(q.resource ?? []), ...(q.service ?? [])]
        .flatMap((r) => r.split(','))
        .map((r) => r.trim())
        .filter(Boolean),
    ),
  ];
  if (ids.length === 0) throw badRequest('resource is required: a service, Postgres or key-value id');
  if (ids.length > 10) throw badRequest('at most 10 resources at once');
  const out: MetricResource[] = [];
  for (const id of ids) {
    if (id.startsWith('srv-')) {
      const s = await loadService(deps, req, id);
      out.push({
        kind: 'service',
        workspaceId: s.workspaceId,
        id,
        plan: s.details.plan,
        autoscaling: s.details.autoscaling,
        diskBytes: s.diskBytes,
      });
    } else if (id.startsWith('dpg-') || id.startsWith('red-')) {
      const row = await deps.datastores.get(id.startsWith('dpg-') ? 'postgres' : 'keyValue', id);
      await deps.guard.resource(req, row.workspaceId, 'resource');
      out.push({
        kind: 'datastore',
        workspaceId: row.workspaceId,
        id,
        connections: name === 'active-connections' ? await connectionsOf(deps, row) : undefined,
        memoryBytes: (row.kind === 'postgres' ? postgresSize(row.plan) : keyValueSize(row.plan)).memoryMb * 1024 * 1024,
      });
    } else throw notFound(`resource ${id}`);
  }
  return out;
}

/** A Postgres datastore's client connections now; undefined for key-value or one not serving (no data, not an error). */
async function connectionsOf(deps: HttpDeps, row: DatastoreRow): Promise<number | undefined> {
  if (row.kind !== 'postgres') return undefined;
  try {
    return (await deps.postgresCredentials.list(row)).reduce((n, c) => n + c.openConnections, 0);
  } catch (err) {
    if (err instanceof AppError) return undefined;
    throw err;
  }
}

/** Render's query, as the family reads it. */
function familyQuery(q: Record<string, unknown>): FamilyQuery {
  const by = (q.aggregateBy ?? q.aggregateHttpRequestCountsBy) as FamilyQuery['aggregateBy'] | 'state' | undefined;
  return {
    ...(q as FamilyQuery),
    instances: q.instance as string[] | undefined,
    hosts: q.host as string[] | undefined,
    paths: q.path as string[] | undefined,
    statusCodes: q.statusCode as string[] | undefined,
    quantiles: q.quantile as number[] | undefined,
    aggregateBy: by === 'state' ? undefined : by,
  };
}

/** Render's /v1/metrics/* operations (GET /v1/metrics/<name> and /v1/metrics/filters/*). */
export function metricFamilyRoutes(deps: HttpDeps) {
  const family = deps.metrics.family;
  const series = (name: MetricName) =>
    defineRoute({
      method: 'GET',
      url: `/v1/metrics/${name}`,
      tags: ['Metrics'],
      access: 'viewer',
      summary: SUMMARIES[name],
      schema: { querystring: Type.Object({ ...Resources, ...PARAMS[name] }), response: { 200: SeriesBody } },
      handler: async (req) =>
        family.series(name, await resourcesOf(deps, req, name), familyQuery(req.query as Record<string, unknown>)),
    });
  const filter = <T>(
    name: string,
    summary: string,
    params: TProperties,
    body: Parameters<typeof defineRoute>[0]['schema']['response'] & object,
    read: (resources: MetricResource[], q: FamilyQuery) => Promise<T>,
  ) =>
    defineRoute({
      method: 'GET',
      url: `/v1/metrics/filters/${name}`,
      tags: ['Metrics'],
      access: 'viewer',
      summary,
      schema: { querystring: Type.Object({ ...Resources, ...params }), response: body },
      handler: async (req) => read(await resourcesOf(deps, req), familyQuery(req.query as Record<string, unknown>)),
    });
  const FilterValues = (filters: readonly string[], title: string) =>
    Type.Array(Type.Object({ filter: literalUnion(filters), values: Type.Array(Type.String()) }), { title });

  return [
    ...METRIC_NAMES.map(series),
    defineRoute({
      method: 'GET',
      url: '/v1/metrics/bandwidth-sources',
      tags: ['Metrics'],
      access: 'viewer',
      summary: "Bytes the router sent for services, hourly, as Render's `total` traffic source",
      schema: { querystring: Type.Object(Resources), response: { 200: BandwidthSources } },
      handler: async (req) =>
        family.bandwidthSources(await resourcesOf(deps, req), familyQuery(req.query as Record<string, unknown>)),
    }),
    filter(
      'application',
      'Instances to filter by: those sampled in the range',
      {},
      { 200: FilterValues(['instance'], 'metricsApplicationFilters') },
      (r, q) => family.instances(r, q),
    ),
    filter(
      'http',
      'Hosts and status codes to filter by: those requests had in the range',
      { host: HttpFilters.host, statusCode: HttpFilters.statusCode },
      { 200: FilterValues(['host', 'statusCode'], 'metricsHttpFilters') },
      (r, q) => family.httpFilters(r, q),
    ),
    filter(
      'path',
      'Paths to filter by: the path groups requests had in the range, most requested first',
      HttpFilters,
      { 200: Type.Array(Type.String(), { title: 'metricsPathFilters' }) },
      (r, q) => family.paths(r, q),
    ),
  ];
}
