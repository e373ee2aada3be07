/**
 * A service's events read as Render's: each one's `type` is in Render's enum and its details pass that type's own
 * schema (Render's details are a oneOf that Ajv cannot pin down, so each is checked against its title's branch).
 * Slipway's own events are listed only when asked for.
 */
import { Ajv } from 'ajv';
import ajvFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { deployFixture, finished, packFixture, upload } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { loadRenderReference } from './helpers/render-reference.js';
import { useServer } from './helpers/server.js';

const renderDoc = loadRenderReference();
const ajv = new Ajv({ strict: false, allErrors: true });
(ajvFormats as unknown as typeof ajvFormats.default)(ajv);
ajv.addSchema(renderDoc, 'render');
const eventSchema = renderDoc.components.schemas.serviceEventWithCursor.properties.event;
const RENDER_TYPES: string[] = renderDoc.components.parameters.eventTypeParam.schema.anyOf[0].enum;
const branches: Array<{ title: string }> = eventSchema.properties.details.oneOf;

/** Render's details schema of a type: build_ended is the branch titled "Build Ended". */
function detailsViolations(type: string, details: unknown): string[] {
  const title = type.replace(/(^|_)([a-z])/g, (_, sep: string, c: string) => (sep ? ' ' : '') + c.toUpperCase());
  const index = branches.findIndex((b) => b.title.toLowerCase() === title.toLowerCase());
  if (index < 0) return [`no Render details for ${type}`];
  const ref = `render#/components/schemas/serviceEventWithCursor/properties/event/properties/details/oneOf/${index}`;
  const validate = ajv.getSchema(ref)!;
  return validate(details) ? [] : (validate.errors ?? []).map((e) => `${type}${e.instancePath} ${e.message}`);
}

const t = useServer();

describe("a service's events", () => {
  it("are Render's types with Render's details: deploys and builds (live, failed, rollback), restart, suspend", async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'node-web');
    const base = `/v1/services/${service.id}`;
    // A build that fails with its exit code, then a rollback to the first deploy, a restart, a suspend and a resume.
    const patched = await t.api.patch(base, { serviceDetails: { buildCommand: 'echo broken >&2; exit 3' } }, owner);
    expect(patched.status).toBe(200);
    const up = await upload(t.api, owner, service.id, await packFixture('node-web'));
    expect(await finished(t.api, owner, service.id, up.body.deployId)).toMatchObject({ status: 'build_failed' });
    const back = await t.api.post(`${base}/rollback`, { deployId: deploy.id }, owner);
    expect(back.status).toBe(201);
    await finished(t.api, owner, service.id, back.body.id);
    expect((await t.api.post(`${base}/restart`, undefined, owner)).status).toBe(200);
    expect((await t.api.post(`${base}/suspend`, undefined, owner)).status).toBe(202);
    expect((await t.api.post(`${base}/resume`, undefined, owner)).status).toBe(202);

    const events = (await t.api.get(`${base}/events?limit=100`, owner)).body.map((i: any) => i.event);
    const types = new Set(events.map((e: any) => e.type));
    for (const type of ['deploy_started', 'build_started', 'build_ended', 'deploy_ended', 'server_restarted'])
      expect(types, type).toContain(type);
    for (const type of ['service_suspended', 'service_resumed']) expect(types, type).toContain(type);
    for (const e of events) {
      expect(RENDER_TYPES, e.type).toContain(e.type);
      expect(detailsViolations(e.type, e.details)).toEqual([]);
    }

    const of = (type: string, deployId: string) =>
      events.find((e: any) => e.type === type && e.details.deployId === deployId)?.details;
    expect(of('build_started', deploy.id)).toMatchObject({
      buildId: deploy.id,
      trigger: { firstBuild: true, manual: false, rollback: false, type: 'new_commit' },
    });
    expect(of('deploy_ended', deploy.id)).toMatchObject({
      deployStatus: 'succeeded',
      status: 2,
      reason: {},
      finalStatus: 'live',
    });
    expect(of('build_ended', up.body.deployId)).toMatchObject({
      buildId: up.body.deployId,
      buildStatus: 'failed',
      reason: { failure: { evicted: false, nonZeroExit: 3 } },
      failureReason: expect.stringMatching(/exited with 3/),
    });
    expect(of('deploy_ended', up.body.deployId)).toMatchObject({ deployStatus: 'failed', finalStatus: 'build_failed' });
    expect(of('deploy_started', back.body.id)).toMatchObject({
      trigger: { rollback: true, rollbackTargetDeployId: deploy.id, firstBuild: false },
    });

    // Slipway's own (service_created, service_updated) are left out unless asked for, by type or all of them.
    expect(types.has('service_created')).toBe(false);
    const all = (await t.api.get(`${base}/events?limit=100&includeSlipwayEvents=true`, owner)).body;
    expect(all.map((i: any) => i.event.type)).toEqual(expect.arrayContaining(['service_created', 'service_updated']));
    const created = (await t.api.get(`${base}/events?type=service_created`, owner)).body;
    expect(created.map((i: any) => i.event.type)).toEqual(['service_created']);
    // GET /v1/events/:id reads the same.
    const one = await t.api.get(`/v1/events/${events[0].id}`, owner);
    expect(one.body).toEqual(events[0]);
  }, 120_000);
});
