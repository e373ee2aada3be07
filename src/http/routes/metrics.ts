import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../../lib/errors.js';
import {
  CPU_RELATIVE_TO,
  HISTORY_METRICS,
  MEMORY_SOURCES,
  type SeriesOptions,
} from '../../observability/metrics/series.js';
import { AGGREGATIONS } from '../../model/enums.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { IdParam, literalUnion, Timestamp } from '../schemas/common.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';

/** Render's metric series (GET /metrics/cpu's 200 body). */
export const SeriesBody = Type.Array(
  Type.Object({
    labels: Type.Array(Type.Object({ field: Type.String(), value: Type.String() })),
    unit: Type.String(),
    values: Type.Array(Type.Object({ timestamp: Timestamp, value: Type.Number(), unit: Type.String() })),
  }),
  { title: 'metricSeries' },
);
export const Aggregation = literalUnion(AGGREGATIONS, {
  description: 'How instances (and samples in a bucket) are combined; default AVG',
});
export const RelativeTo = Type.Optional(
  literalUnion(CPU_RELATIVE_TO, {
    description: "CPU in percent of one core (default) or of the plan's CPU limit",
  }),
);
export const Source = Type.Optional(
  literalUnion(MEMORY_SOURCES, {
    description: "Memory: RSS of the process tree (default) or the instance cgroup's usage",
  }),
);
export const Instances = Type.Optional(
  Type.Array(Type.String({ maxLength: 64 }), {
    maxItems: 50,
    description: "Only these instances (Render's instance filter)",
  }),
);
export const Range = {
  startTime: Type.Optional(Timestamp),
  endTime: Type.Optional(Timestamp),
  resolutionSeconds: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 31_536_000,
      description: 'Bucket size in seconds: at least the sampling interval, at most a year (365 days); default 60',
    }),
  ),
};

/** The service (404 unless the caller may read it) and its plan, for CPU relative to the limit. */
async function serviceOf(deps: HttpDeps, req: FastifyRequest, serviceId: string, resource?: string[]) {
  if (resource?.some((r) => r !== serviceId)) throw badRequest('resource, when given, must be the service of the path');
  const service = await loadService(deps, req, serviceId);
  return { id: service.id, plan: service.details.plan };
}

/** CPU and memory of a service's instances (current values, or a range with Render's parameters) and its history. */
export function metricRoutes(deps: HttpDeps) {
  const current = (metric: 'cpu' | 'memory') =>
    defineRoute({
      method: 'GET',
      url: `/v1/metrics/:serviceId/${metric}`,
      tags: ['Metrics'],
      access: 'viewer',
      summary:
        metric === 'cpu'
          ? "CPU of a service's instances (current, or a range)"
          : "Memory of a service's instances (current, or a range)",
      schema: {
        params: Type.Object({ serviceId: IdParam }),
        querystring: Type.Object({
          resource: Type.Optional(
            Type.Array(Type.String({ maxLength: 64 }), {
              maxItems: 10,
              description: "Render's form: the service id again",
            }),
          ),
          instance: Instances,
          aggregationMethod: Type.Optional(Aggregation),
          ...Range,
          ...(metric === 'cpu' ? { relativeTo: RelativeTo } : { source: Source }),
        }),
        response: { 200: SeriesBody },
      },
      handler: async (req) => {
        const q = req.query as {
          resource?: string[];
          instance?: string[];
          aggregationMethod?: SeriesOptions['aggregationMethod'];
          startTime?: string;
          endTime?: string;
          resolutionSeconds?: number;
          relativeTo?: SeriesOptions['relativeTo'];
          source?: SeriesOptions['source'];
        };
        const service = await serviceOf(deps, req, req.params.serviceId, q.resource);
        const options = { ...q, instances: q.instance };
        // With a time range this is Render's /metrics/cpu|memory: the history of that metric.
        return q.startTime || q.endTime || q.resolutionSeconds
          ? deps.metrics.history(service, metric, options)
          : deps.metrics.current(service, metric, options);
      },
    });

  return [
    current('cpu'),
    current('memory'),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/metrics/history',
      tags: ['Metrics'],
      access: 'viewer',
      summary: 'A metric of a service over time, downsampled into buckets',
      schema: {
        params: ServiceParams,
        querystring: Type.Object({
          metric: literalUnion(HISTORY_METRICS),
          aggregationMethod: Type.Optional(Aggregation),
          instance: Instances,
          relativeTo: RelativeTo,
          source: Source,
          ...Range,
        }),
        response: { 200: SeriesBody },
      },
      handler: async (req) => {
        const service = await serviceOf(deps, req, req.params.serviceId);
        return deps.metrics.history(service, req.query.metric, { ...req.query, instances: req.query.instance });
      },
    }),
  ];
}
