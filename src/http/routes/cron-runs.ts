import { principalUser } from '../../core/principal.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { loadService } from '../helpers/load-service.js';
import { defineRoute } from '../route.js';
import { NoContent } from '../schemas/common.js';
import { CronJobParams, CronJobRunBody, cronJobRunBody } from '../schemas/jobs.js';

/** Render's cron runs by request (docs/deploys.md, "Cron runs"): run one now, cancel the one going. */
export function cronRunRoutes(deps: HttpDeps) {
  const runs = deps.engine.cronRuns;
  const userOf = (req: Parameters<typeof principalOf>[0]) => {
    const user = principalUser(principalOf(req));
    return user && { id: user.id, email: user.email };
  };
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/cron-jobs/:cronJobId/runs',
      summary: "Run a cron job now, canceling a run still going (as Render's does); 409 without a live deploy",
      tags: ['Cron jobs'],
      access: 'developer',
      audit: 'TriggerCronJobRunEvent',
      schema: { params: CronJobParams, response: { 200: CronJobRunBody } },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.cronJobId);
        return cronJobRunBody(await runs.trigger(service, userOf(req)));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/cron-jobs/:cronJobId/runs',
      summary: 'Cancel the run of a cron job that is going (409 when none is)',
      tags: ['Cron jobs'],
      access: 'developer',
      audit: 'CancelCronJobRunEvent',
      schema: { params: CronJobParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await runs.cancel(await loadService(deps, req, req.params.cronJobId), userOf(req));
        return reply.code(204).send(null);
      },
    }),
  ];
}
