import { Type } from '@sinclair/typebox';
import { principalUser } from '../../core/principal.js';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import { badRequest } from '../../lib/errors.js';
import type { JobStatus } from '../../model/enums.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, Envelope, ListQuery, splitList, Timestamp, toDate } from '../schemas/common.js';
import { JobBody, jobBody, JobInput, JobParams, JobStatusList } from '../schemas/jobs.js';

const TIME_FILTERS = ['created', 'started', 'finished'] as const;

/** Render's one-off jobs: a command run once in the service's live build (docs/deploys.md, "One-off jobs"). */
export function jobRoutes(deps: HttpDeps) {
  const { jobs } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/jobs',
      summary: "Run a command once in the service's live build, with its env (201 pending; 409 without a live deploy)",
      tags: ['One-off jobs'],
      access: 'developer',
      audit: 'CreateJobEvent',
      schema: { params: ServiceParams, body: JobInput, response: { 201: JobBody } },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const job = await jobs.create(service, req.body, principalUser(principalOf(req))?.id);
        req.auditInfo.target = job.id;
        return reply.code(201).send(jobBody(job, service.type));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/jobs',
      summary: "List a service's one-off jobs, newest first",
      tags: ['One-off jobs'],
      access: 'viewer',
      schema: {
        params: ServiceParams,
        querystring: Type.Object({
          status: JobStatusList,
          ...Object.fromEntries(
            TIME_FILTERS.flatMap((f) => [`${f}Before`, `${f}After`]).map((k) => [k, Type.Optional(Timestamp)]),
          ),
          ...ListQuery,
        }),
        response: { 200: Envelope('job', JobBody) },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const q = req.query as typeof req.query & Record<string, string | undefined>;
        const window = Object.fromEntries(
          TIME_FILTERS.flatMap((f) => {
            const [after, before] = [toDate(q[`${f}After`]), toDate(q[`${f}Before`])];
            if (after && before && after > before) throw badRequest(`${f}After must not be after ${f}Before`);
            return [
              [`${f}After`, after],
              [`${f}Before`, before],
            ];
          }),
        );
        const rows = await jobs.list(service, {
          ...window,
          status: splitList(q.status) as JobStatus[] | undefined,
          beforeId: decodeCursor(q.cursor),
          limit: q.limit ?? DEFAULT_LIMIT,
        });
        return envelope(
          'job',
          rows.map((j) => jobBody(j, service.type)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/jobs/:jobId',
      summary: 'Retrieve a one-off job: its status, times and exit code',
      tags: ['One-off jobs'],
      access: 'viewer',
      schema: { params: JobParams, response: { 200: JobBody } },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        return jobBody(await jobs.get(service, req.params.jobId), service.type);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/jobs/:jobId/cancel',
      summary: 'Cancel a pending or running job: SIGTERM, then SIGKILL after maxShutdownDelaySeconds (409 once ended)',
      tags: ['One-off jobs'],
      access: 'developer',
      audit: 'CancelJobEvent',
      schema: { params: JobParams, response: { 200: JobBody } },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        req.auditInfo.target = req.params.jobId;
        const job = await jobs.cancel(service, req.params.jobId, principalUser(principalOf(req))?.id);
        return jobBody(job, service.type);
      },
    }),
  ];
}
