/**
 * Slipway's bodies, validated against Render's public OpenAPI schemas read at test time
 * from the shared reference beside the repo (see helpers/render-reference.ts).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootServer, type TestServer } from './helpers/server.js';
import {
  addMember,
  client,
  createApiKey,
  sessionCookie,
  signUp,
  uniqueEmail,
  type Client,
  type TestUser,
} from './helpers/client.js';
import { loadRenderReference } from './helpers/render-reference.js';
import { RENDER_WEBHOOK_EVENT_TYPES, WEBHOOK_EVENT_TYPES } from '../src/model/enums.js';
import { deployFixture } from './helpers/apps.js';

const renderDoc = loadRenderReference();

// Render's auditLog `event` enum has no names for creating or deleting an API key or for
// revoking a team invite, nor for Slipway's own webhook routes (test ping, secret rotation) or notification settings, so Slipway emits its own
// names for those actions. Only those names are added, and only for the audit-log check; everything else is Render's.
const SLIPWAY_EVENTS = [
  'CreateApiKeyEvent',
  'DeleteApiKeyEvent',
  'RevokeTeamInviteEvent',
  'TestWebhookEvent',
  'RotateWebhookSecretEvent',
  'UpdateNotificationSettingsEvent',
  'UpdateNotificationOverrideEvent',
];
const SLIPWAY_WEBHOOK_EVENT_TYPES = WEBHOOK_EVENT_TYPES.filter(
  (t) => !(RENDER_WEBHOOK_EVENT_TYPES as readonly string[]).includes(t),
);
const ajv = new Ajv({ strict: false, allErrors: true });
(ajvFormats as unknown as typeof ajvFormats.default)(ajv);
const withSlipwayEvents = structuredClone(renderDoc);
withSlipwayEvents.components.schemas.auditLog.properties.event.enum.push(...SLIPWAY_EVENTS);
// Webhook event types Render has no name for (Slipway's, in the same style), for the delivery log's check.
withSlipwayEvents.components.schemas.webhookEventWithCursor.properties.webhookEvent.properties.eventType.enum.push(
  ...SLIPWAY_WEBHOOK_EVENT_TYPES,
);
ajv.addSchema(renderDoc, 'render');
ajv.addSchema(withSlipwayEvents, 'render-with-slipway-events');
// Render's serviceDetails is a oneOf that a web service's details match twice (web and
// private share every field); the details are checked against their type's own schema instead.
const looseDetails = structuredClone(renderDoc);
looseDetails.components.schemas.service.properties.serviceDetails = { type: 'object' };
ajv.addSchema(looseDetails, 'render-loose-details');
const DETAILS_SCHEMA: Record<string, string> = {
  web_service: 'webServiceDetails',
  private_service: 'privateServiceDetails',
  background_worker: 'backgroundWorkerDetails',
  static_site: 'staticSiteDetails',
  cron_job: 'cronJobDetails',
};
/** Render's `service`, with serviceDetails held to the schema of the service's type. */
function serviceViolations(body: { type: string; serviceDetails: unknown }): string[] {
  return [
    ...violations(component('service', 'render-loose-details'), body),
    ...violations(component(DETAILS_SCHEMA[body.type]!), body.serviceDetails),
  ];
}

function validator(ref: string): ValidateFunction {
  const validate = ajv.getSchema(ref);
  if (!validate) throw new Error(`no schema at ${ref}`);
  return validate;
}
const component = (name: string, doc = 'render') => validator(`${doc}#/components/schemas/${name}`);
/** Render's 200 body of `GET <renderPath>`. */
const renderResponse = (renderPath: string) =>
  validator(`render#/paths/${renderPath.replaceAll('/', '~1')}/get/responses/200/content/application~1json/schema`);

/** Ajv's complaints about `value` ([] when it conforms). */
function violations(validate: ValidateFunction, value: unknown): string[] {
  return validate(value)
    ? []
    : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}

let server: TestServer;
let api: Client;
let owner: TestUser, developer: TestUser, viewer: TestUser;
const OPERATOR_TOKEN = 'operator-token-for-conformance-0123456789';

describe("conformance with Render's public API schemas", () => {
  beforeAll(async () => {
    server = await bootServer({ SLIPWAY_OPERATOR_TOKEN: OPERATOR_TOKEN });
    api = client(server.url);
    const ok = (res: { status: number; text: string }, status: number, what: string) => {
      if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${res.text}`);
    };
    // Real mutations, so the audit log holds every kind of entry Slipway writes today.
    owner = await signUp(api, { name: 'Owner A' }); // CreateWorkspaceEvent
    let joiner: TestUser;
    [developer, viewer, joiner] = await Promise.all([
      addMember(api, owner, 'developer'), // InviteToTeamEvent
      addMember(api, owner, 'viewer'),
      signUp(api),
      (async () => {
        const login = await api.post('/v1/auth/login', { email: owner.email, password: owner.password }); // LoginEvent
        ok(login, 200, 'login');
        ok(await api.post('/v1/auth/logout', undefined, { cookie: sessionCookie(login) }), 204, 'logout'); // LogoutEvent
      })(),
    ]);
    const key = await createApiKey(api, owner, 'ci'); // CreateApiKeyEvent by a user
    const byKey = await createApiKey(api, { token: key.token }, 'made by a key'); // ... by rest_api
    ok(await api.delete(`/v1/api-keys/${byKey.id}`, { token: key.token }), 204, 'delete key'); // DeleteApiKeyEvent
    const invite = await api.post('/v1/team-invites', { email: joiner.email, role: 'viewer' }, owner);
    ok(invite, 201, 'invite');
    ok(await api.post(`/v1/team-invites/${invite.body.token}/accept`, undefined, joiner), 200, 'accept'); // AcceptTeamInviteEvent
    ok(await api.patch(`/v1/team-members/${joiner.id}`, { role: 'developer' }, owner), 200, 'change role'); // ChangeTeamMemberRoleEvent
    ok(await api.delete(`/v1/team-members/${joiner.id}`, owner), 204, 'remove'); // RemoveUserFromTeamEvent
    const revoked = await api.post('/v1/team-invites', { email: uniqueEmail('revoked'), role: 'developer' }, owner);
    ok(await api.delete(`/v1/team-invites/${revoked.body.id}`, owner), 204, 'revoke'); // RevokeTeamInviteEvent
    // A refused mutation is audited too, with status "error".
    ok(
      await api.post(
        '/v1/team-invites',
        { email: uniqueEmail(), role: 'viewer', ownerId: owner.workspaceId },
        developer,
      ),
      403,
      'developer invite',
    );
  });
  afterAll(() => server?.close());

  it("reads Render's document and its validators reject what Render rejects", () => {
    expect(renderDoc.info.title).toBe('Render Public API');
    expect(violations(component('user'), { name: 'no email' })).not.toEqual([]);
    expect(violations(component('owner'), { id: 'tea-x', name: 'n', email: 'e', type: 'org' })).not.toEqual([]);
    expect(violations(renderResponse('/owners'), { owner: {} })).not.toEqual([]);
  });

  it("GET /v1/users is Render's user", async () => {
    const me = await api.get('/v1/users', owner);
    expect(me.status).toBe(200);
    expect(violations(component('user'), me.body)).toEqual([]);
    expect(violations(renderResponse('/users'), me.body)).toEqual([]);
  });

  it("error bodies (401, 404) are Render's error", async () => {
    const unauthorized = await api.get('/v1/users');
    expect(unauthorized.status).toBe(401);
    expect(violations(component('error'), unauthorized.body)).toEqual([]);
    expect(unauthorized.body).toMatchObject({
      id: unauthorized.headers.get('request-id'),
      message: expect.any(String),
    });
    const missing = await api.get('/v1/owners/tea-00000000000000000000', owner);
    expect(missing.status).toBe(404);
    expect(violations(component('error'), missing.body)).toEqual([]);
    expect(missing.body).toMatchObject({ id: missing.headers.get('request-id'), message: expect.any(String) });
  });

  it("GET /v1/owners is Render's array of ownerWithCursor, with exactly Render's envelope", async () => {
    const list = await api.get('/v1/owners', developer);
    expect(list.status).toBe(200);
    expect(violations(renderResponse('/owners'), list.body)).toEqual([]);
    expect(list.body).toHaveLength(2); // the developer's own workspace and A's
    for (const item of list.body) {
      expect(Object.keys(item).sort()).toEqual(['cursor', 'owner']);
      expect(item.cursor).toEqual(expect.any(String));
      expect(violations(component('ownerWithCursor'), item)).toEqual([]);
    }
    expect(list.body.map((i: { owner: { id: string } }) => i.owner.id)).toContain(owner.workspaceId);
  });

  it("GET /v1/owners/:ownerId is Render's owner", async () => {
    const one = await api.get(`/v1/owners/${owner.workspaceId}`, viewer);
    expect(one.status).toBe(200);
    expect(one.body.id).toBe(owner.workspaceId);
    expect(violations(component('owner'), one.body)).toEqual([]);
  });

  it("GET /v1/owners/:ownerId/members is Render's teamMembers", async () => {
    const members = await api.get(`/v1/owners/${owner.workspaceId}/members`, viewer);
    expect(members.status).toBe(200);
    expect(members.body.map((m: { userId: string }) => m.userId).sort()).toEqual(
      [owner.id, developer.id, viewer.id].sort(),
    );
    expect(violations(component('teamMembers'), members.body)).toEqual([]);
    expect(violations(renderResponse('/owners/{ownerId}/members'), members.body)).toEqual([]);
  });

  describe("audit logs are Render's auditLogWithCursor (event enum + Slipway's three names)", () => {
    const auditLogWithCursor = () => component('auditLogWithCursor', 'render-with-slipway-events');

    it('adds only names Render lacks', () => {
      const renderEvents: string[] = renderDoc.components.schemas.auditLog.properties.event.enum;
      expect(SLIPWAY_EVENTS.filter((e) => renderEvents.includes(e))).toEqual([]);
      expect(
        violations(auditLogWithCursor(), {
          cursor: 'c',
          auditLog: {
            id: 'aud-1',
            timestamp: new Date().toISOString(),
            event: 'MadeUpEvent',
            status: 'success',
            actor: { type: 'user' },
            metadata: {},
          },
        }),
      ).not.toEqual([]);
    });

    // The organization's (this installation's) log, read with the operator token, holds the same kinds of entries.
    for (const route of [
      '/v1/audit-logs',
      '/v1/owners/:ownerId/audit-logs',
      '/v1/organizations/org-slipway/audit-logs',
    ]) {
      it(`GET ${route}`, async () => {
        const as = route.startsWith('/v1/organizations/') ? { token: OPERATOR_TOKEN } : owner;
        const res = await api.get(`${route.replace(':ownerId', owner.workspaceId)}?limit=100`, as);
        expect(res.status).toBe(200);
        const entries = res.body as {
          cursor: string;
          auditLog: { event: string; status: string; actor: { type: string } };
        }[];
        expect(
          entries.flatMap((item, i) =>
            violations(auditLogWithCursor(), item).map((v) => `[${i}] ${item.auditLog?.event}: ${v}`),
          ),
        ).toEqual([]);
        for (const item of entries) expect(Object.keys(item).sort()).toEqual(['auditLog', 'cursor']);
        // The mutations above really produced entries of every kind.
        const events = new Set(entries.map((e) => e.auditLog.event));
        for (const event of [
          'CreateWorkspaceEvent',
          'LoginEvent',
          'LogoutEvent',
          'CreateApiKeyEvent',
          'DeleteApiKeyEvent',
          'InviteToTeamEvent',
          'AcceptTeamInviteEvent',
          'ChangeTeamMemberRoleEvent',
          'RemoveUserFromTeamEvent',
          'RevokeTeamInviteEvent',
        ])
          expect(events, event).toContain(event);
        expect(new Set(entries.map((e) => e.auditLog.status))).toEqual(new Set(['success', 'error']));
        expect(new Set(entries.map((e) => e.auditLog.actor.type))).toEqual(new Set(['user', 'rest_api']));
      });
    }
  });

  describe("services and deploys are Render's", () => {
    const renderBody = (method: string, renderPath: string, status = '200', doc = 'render') =>
      validator(
        `${doc}#/paths/${renderPath.replaceAll('/', '~1').replaceAll('{', '%7B').replaceAll('}', '%7D')}/${method}/responses/${status}/content/application~1json/schema`,
      );
    let deployed: Awaited<ReturnType<typeof deployFixture>>;
    beforeAll(async () => {
      deployed = await deployFixture(api, owner, 'node-web', { envVars: [{ key: 'GREETING', value: 'hi' }] });
    });

    it("POST /v1/services answers Render's serviceAndDeploy; GET one and the list are Render's service", async () => {
      for (const type of ['web_service', 'private_service', 'background_worker', 'static_site', 'cron_job']) {
        const details =
          type === 'cron_job'
            ? { runtime: 'node', schedule: '0 3 * * *' }
            : type === 'static_site'
              ? {}
              : { runtime: 'node' };
        const created = await api.post(
          '/v1/services',
          { type, name: `conf-${type}`, autoDeploy: 'no', serviceDetails: details },
          owner,
        );
        expect(created.status, created.text).toBe(201);
        expect(violations(renderBody('post', '/services', '201', 'render-loose-details'), created.body), type).toEqual(
          [],
        );
        expect(serviceViolations(created.body.service), type).toEqual([]);
      }
      const one = await api.get(`/v1/services/${deployed.service.id}`, owner);
      expect(serviceViolations(one.body)).toEqual([]);
      const list = await api.get('/v1/services?limit=100', owner);
      expect(list.body.length).toBeGreaterThanOrEqual(6);
      expect(violations(renderBody('get', '/services', '200', 'render-loose-details'), list.body)).toEqual([]);
      for (const item of list.body) expect(serviceViolations(item.service), item.service.type).toEqual([]);
    });

    it("a static site's header and route rules are Render's", async () => {
      const site = await api.post(
        '/v1/services',
        { type: 'static_site', name: 'conf-rules', autoDeploy: 'no', serviceDetails: {} },
        owner,
      );
      const base = `/v1/services/${site.body.service.id}`;
      const header = await api.post(`${base}/headers`, { path: '/*', name: 'X-A', value: '1' }, owner);
      expect(violations(renderBody('post', '/services/{serviceId}/headers', '201'), header.body)).toEqual([]);
      const headers = await api.get(`${base}/headers`, owner);
      expect(headers.body).toHaveLength(1);
      expect(violations(renderBody('get', '/services/{serviceId}/headers'), headers.body)).toEqual([]);
      const put = await api.put(`${base}/headers`, [{ path: '/a', name: 'X-B', value: '2' }], owner);
      expect(violations(renderBody('put', '/services/{serviceId}/headers'), put.body)).toEqual([]);
      const route = await api.post(`${base}/routes`, { type: 'rewrite', source: '/*', destination: '/i.html' }, owner);
      expect(violations(renderBody('post', '/services/{serviceId}/routes', '201'), route.body)).toEqual([]);
      const routes = await api.get(`${base}/routes`, owner);
      expect(routes.body).toHaveLength(1);
      expect(violations(renderBody('get', '/services/{serviceId}/routes'), routes.body)).toEqual([]);
      const moved = await api.patch(`${base}/routes`, { id: route.body.id, priority: 0 }, owner);
      expect(violations(renderBody('patch', '/services/{serviceId}/routes'), moved.body)).toEqual([]);
      const replaced = await api.put(`${base}/routes`, [{ type: 'redirect', source: '/a', destination: '/b' }], owner);
      expect(violations(renderBody('put', '/services/{serviceId}/routes'), replaced.body)).toEqual([]);
    });

    it("every /v1/metrics/* operation answers Render's body", async () => {
      const q = `resource=${deployed.service.id}`;
      // Every /metrics/* operation Render's document has, so one it adds and Slipway lacks fails here.
      const names = Object.keys(renderDoc.paths)
        .filter((p) => p.startsWith('/metrics/'))
        .map((p) => p.slice('/metrics/'.length));
      expect(names.length).toBeGreaterThanOrEqual(20);
      for (const name of names) {
        const res = await api.get(`/v1/metrics/${name}?${q}`, viewer);
        expect(res.status, `${name}: ${res.text}`).toBe(200);
        // Every series operation's 200 is a $ref to /metrics/cpu's; the filters and bandwidth-sources have their own.
        const own = name.startsWith('filters/') || name === 'bandwidth-sources';
        const schema = renderBody('get', own ? `/metrics/${name}` : '/metrics/cpu');
        expect(violations(schema, res.body), name).toEqual([]);
      }
      // Limits are series whatever the traffic: the check above saw values, not only an empty list.
      expect((await api.get(`/v1/metrics/memory-limit?${q}`, viewer)).body[0].values.length).toBeGreaterThan(0);
    });

    it("deploys, env vars and events are Render's", async () => {
      const { service, deploy } = deployed;
      expect(
        violations(component('deploy'), (await api.get(`/v1/services/${service.id}/deploys/${deploy.id}`, owner)).body),
      ).toEqual([]);
      expect(
        violations(
          renderBody('get', '/services/{serviceId}/deploys'),
          (await api.get(`/v1/services/${service.id}/deploys`, owner)).body,
        ),
      ).toEqual([]);
      const triggered = await api.post(`/v1/services/${service.id}/deploys`, { clearCache: 'do_not_clear' }, owner);
      expect(violations(renderBody('post', '/services/{serviceId}/deploys', '201'), triggered.body)).toEqual([]);
      expect(
        violations(
          renderBody('get', '/services/{serviceId}/env-vars'),
          (await api.get(`/v1/services/${service.id}/env-vars`, owner)).body,
        ),
      ).toEqual([]);
      expect(
        violations(component('envVar'), (await api.get(`/v1/services/${service.id}/env-vars/GREETING`, owner)).body),
      ).toEqual([]);
      // Event details follow Render's per-type fields loosely (a oneOf Ajv cannot pin down); the envelope is exact.
      const events = await api.get(`/v1/services/${service.id}/events`, owner);
      expect(events.body.length).toBeGreaterThan(0);
      for (const item of events.body) {
        expect(Object.keys(item).sort()).toEqual(['cursor', 'event']);
        expect(Object.keys(item.event).sort()).toEqual(['details', 'id', 'serviceId', 'timestamp', 'type']);
      }
    });

    it("one-off jobs are Render's job and jobWithCursor (create 201, get, list, cancel), and end in job_run_ended", async () => {
      const base = `/v1/services/${deployed.service.id}/jobs`;
      const created = await api.post(base, { startCommand: 'echo hi' }, owner);
      expect(created.status, created.text).toBe(201);
      expect(violations(renderBody('post', '/services/{serviceId}/jobs', '201'), created.body)).toEqual([]);
      const sleeper = await api.post(base, { startCommand: 'sleep 30', planId: 'plan-srv-008' }, owner);
      const canceled = await api.post(`${base}/${sleeper.body.id}/cancel`, undefined, owner);
      expect(canceled.status, canceled.text).toBe(200);
      expect(violations(renderBody('post', '/services/{serviceId}/jobs/{jobId}/cancel'), canceled.body)).toEqual([]);
      const one = await api.get(`${base}/${created.body.id}`, owner);
      expect(violations(renderBody('get', '/services/{serviceId}/jobs/{jobId}'), one.body)).toEqual([]);
      const list = await api.get(base, owner);
      expect(list.body).toHaveLength(2);
      expect(violations(renderBody('get', '/services/{serviceId}/jobs'), list.body)).toEqual([]);
      const ends = await api.get(`/v1/services/${deployed.service.id}/events?type=job_run_ended`, owner);
      // The canceled job's end at least (the echo's may not have come yet).
      expect(new Set(ends.body.map((i: { event: { type: string } }) => i.event.type))).toEqual(
        new Set(['job_run_ended']),
      );
    });

    it("env groups are Render's envGroup and envGroupMeta", async () => {
      const created = await api.post(
        '/v1/env-groups',
        { name: 'conformance', envVars: [{ key: 'K', value: 'v' }], serviceIds: [deployed.service.id] },
        owner,
      );
      expect(violations(renderBody('post', '/env-groups', '201'), created.body)).toEqual([]);
      expect(
        violations(component('envGroup'), (await api.get(`/v1/env-groups/${created.body.id}`, owner)).body),
      ).toEqual([]);
      expect(violations(renderBody('get', '/env-groups'), (await api.get('/v1/env-groups', owner)).body)).toEqual([]);
      const linked = await api.post(
        `/v1/env-groups/${created.body.id}/services/${deployed.service.id}`,
        undefined,
        owner,
      );
      expect(violations(renderBody('post', '/env-groups/{envGroupId}/services/{serviceId}'), linked.body)).toEqual([]);
    });

    it("registry credentials are Render's registryCredential (create answers 200, as Render's)", async () => {
      const body = { registry: 'GITHUB', name: 'conformance', username: 'octocat', authToken: 'ghp_conformance' };
      const created = await api.post('/v1/registrycredentials', { ...body, ownerId: owner.workspaceId }, owner);
      expect(created.status, created.text).toBe(200);
      expect(violations(renderBody('post', '/registrycredentials'), created.body)).toEqual([]);
      const path = '/registrycredentials/{registryCredentialId}';
      const url = `/v1/registrycredentials/${created.body.id}`;
      expect(violations(renderBody('get', path), (await api.get(url, owner)).body)).toEqual([]);
      const patched = await api.patch(url, { ...body, registry: 'AWS_ECR', authToken: 'rotated' }, owner);
      expect(violations(renderBody('patch', path), patched.body)).toEqual([]);
      const list = await api.get('/v1/registrycredentials', owner);
      expect(list.body.length).toBeGreaterThan(0);
      expect(violations(renderBody('get', '/registrycredentials'), list.body)).toEqual([]);
      // Exactly Render's fields: nothing more (the token above all) is in a body.
      for (const item of [created.body, patched.body, ...list.body])
        expect(Object.keys(item).sort()).toEqual(['id', 'name', 'registry', 'updatedAt', 'username']);
      expect((await api.delete(url, owner)).status).toBe(204);
    });

    it('maintenance runs (none: an empty list, any run a 404) and cache purge (no cache: a 409)', async () => {
      const list = await api.get(`/v1/maintenance?ownerId=${owner.workspaceId}&state=scheduled`, owner);
      expect(list.status, list.text).toBe(200);
      expect(list.body).toEqual([]);
      expect(violations(renderBody('get', '/maintenance'), list.body)).toEqual([]);
      const stranger = await signUp(api);
      expect((await api.get(`/v1/maintenance?ownerId=${owner.workspaceId}`, stranger)).status).toBe(404);
      expect((await api.get('/v1/maintenance/mrn-abc', owner)).status).toBe(404);
      expect((await api.get('/v1/maintenance?state=sleeping', owner)).status).toBe(400);
      // Nor is there a cache to purge: a 409 that says so, not a 202 that pretends.
      const purge = await api.post(`/v1/services/${deployed.service.id}/cache/purge`, undefined, developer);
      expect(purge.status, purge.text).toBe(409);
      expect(purge.body.message).toMatch(/caches no responses/);
      expect((await api.post(`/v1/services/${deployed.service.id}/cache/purge`, undefined, stranger)).status).toBe(404);
    });

    it("log streams are Render's owner setting and resource override, and log label values Render's list", async () => {
      const ownerPath = '/logs/streams/owner/{ownerId}';
      const url = `/v1/logs/streams/owner/${owner.workspaceId}`;
      // Render's PUT answers the GET's body (its response is a $ref to it).
      const put = await api.put(
        url,
        { endpoint: 'logs.example.com:6514', token: 'conformance', preview: 'send' },
        owner,
      );
      expect(put.status, put.text).toBe(200);
      expect(violations(renderBody('get', ownerPath), put.body)).toEqual([]);
      expect(violations(renderBody('get', ownerPath), (await api.get(url, owner)).body)).toEqual([]);
      expect(Object.keys(put.body).sort()).toEqual(['endpoint', 'ownerId', 'preview']); // never the token
      const resourcePath = '/logs/streams/resource/{resourceId}';
      const resourceUrl = `/v1/logs/streams/resource/${deployed.service.id}`;
      for (const body of [{ setting: 'send', endpoint: 'other.example.com:6514', token: 't' }, { setting: 'drop' }]) {
        const override = await api.put(resourceUrl, body, owner);
        expect(override.status, override.text).toBe(200);
        expect(violations(renderBody('get', resourcePath), override.body)).toEqual([]);
        expect(violations(renderBody('get', resourcePath), (await api.get(resourceUrl, owner)).body)).toEqual([]);
      }
      const list = await api.get(`/v1/logs/streams/resource?ownerId=${owner.workspaceId}`, owner);
      expect(list.body).toHaveLength(1);
      expect(violations(renderBody('get', '/logs/streams/resource'), list.body)).toEqual([]);
      const values = await api.get(`/v1/logs/values?ownerId=${owner.workspaceId}&label=type`, owner);
      expect(values.status, values.text).toBe(200);
      const valuesSchema = validator(
        'render#/components/responses/LogsValues200Response/content/application~1json/schema',
      );
      expect(violations(valuesSchema, values.body)).toEqual([]);
      expect((await api.delete(resourceUrl, owner)).status).toBe(204);
      expect((await api.delete(url, owner)).status).toBe(204);
    });

    it("webhooks are Render's webhook, webhookWithCursor and webhookEventWithCursor", async () => {
      // Disabled: nothing is sent to the example address.
      const body = { ownerId: owner.workspaceId, name: 'conformance', url: 'https://example.com/hook', enabled: false };
      const created = await api.post(
        '/v1/webhooks',
        { ...body, eventFilter: ['deploy_ended', 'server_failed'] },
        owner,
      );
      expect(violations(renderBody('post', '/webhooks', '201'), created.body)).toEqual([]);
      const id = created.body.id;
      expect(created.body.id).toMatch(/^whk-[0-9a-z]{20}$/);
      expect(
        violations(renderBody('get', '/webhooks/{webhookId}'), (await api.get(`/v1/webhooks/${id}`, owner)).body),
      ).toEqual([]);
      const patched = await api.patch(`/v1/webhooks/${id}`, { name: 'renamed', eventFilter: [] }, owner);
      expect(violations(renderBody('patch', '/webhooks/{webhookId}'), patched.body)).toEqual([]);
      const list = await api.get('/v1/webhooks', owner);
      expect(list.body.length).toBeGreaterThan(0);
      expect(violations(renderBody('get', '/webhooks'), list.body)).toEqual([]);
      // The delivery log of an enabled webhook whose one attempt fails at once (nothing listens on port 9 here).
      await api.patch(`/v1/webhooks/${id}`, { url: 'http://localhost:9/', enabled: true }, owner);
      await api.post(`/v1/webhooks/${id}/test`, undefined, owner);
      let log: any[] = [];
      for (let i = 0; i < 100 && !log.length; i++) {
        await new Promise((r) => setTimeout(r, 100));
        log = (await api.get(`/v1/webhooks/${id}/events`, owner)).body;
      }
      expect(log.length).toBeGreaterThan(0);
      expect(
        violations(renderBody('get', '/webhooks/{webhookId}/events', '200', 'render-with-slipway-events'), log),
      ).toEqual([]);
      const renderTypes = renderDoc.components.schemas.webhookEventWithCursor.properties.webhookEvent.properties
        .eventType.enum as string[];
      expect([...RENDER_WEBHOOK_EVENT_TYPES]).toEqual(renderTypes);
      expect((await api.delete(`/v1/webhooks/${id}`, owner)).status).toBe(204);
    });

    it("notification settings and overrides are Render's (owner settings, override, notificationOverrideWithCursor)", async () => {
      const owned = `/v1/notification-settings/owners/${owner.workspaceId}`;
      const got = await api.get(owned, owner);
      expect(violations(renderBody('get', '/notification-settings/owners/{ownerId}'), got.body)).toEqual([]);
      const patched = await api.patch(owned, { notificationsToSend: 'all', emailEnabled: false }, owner);
      expect(violations(renderBody('patch', '/notification-settings/owners/{ownerId}'), patched.body)).toEqual([]);
      const one = `/v1/notification-settings/overrides/services/${deployed.service.id}`;
      expect(
        violations(
          renderBody('get', '/notification-settings/overrides/services/{serviceId}'),
          (await api.get(one, owner)).body,
        ),
      ).toEqual([]);
      const override = await api.patch(
        one,
        { notificationsToSend: 'none', previewNotificationsEnabled: 'true' },
        owner,
      );
      expect(
        violations(renderBody('patch', '/notification-settings/overrides/services/{serviceId}'), override.body),
      ).toEqual([]);
      const list = await api.get(`/v1/notification-settings/overrides?serviceId=${deployed.service.id}`, owner);
      expect(list.body).toHaveLength(1);
      expect(violations(renderBody('get', '/notification-settings/overrides'), list.body)).toEqual([]);
      await api.patch(owned, { notificationsToSend: 'failure', emailEnabled: true }, owner);
      await api.patch(one, { notificationsToSend: 'default', previewNotificationsEnabled: 'default' }, owner);
    });

    it("projects and environments are Render's project, environment and their envelopes", async () => {
      const created = await api.post(
        '/v1/projects',
        {
          name: 'conformance',
          environments: [{ name: 'production', ipAllowList: [{ cidrBlock: '10.0.0.0/8', description: 'vpn' }] }],
        },
        owner,
      );
      expect(violations(renderBody('post', '/projects', '201'), created.body)).toEqual([]);
      expect(
        violations(
          renderBody('get', '/projects/{projectId}'),
          (await api.get(`/v1/projects/${created.body.id}`, owner)).body,
        ),
      ).toEqual([]);
      expect(
        violations(
          renderBody('patch', '/projects/{projectId}'),
          (await api.patch(`/v1/projects/${created.body.id}`, { name: 'conformed' }, owner)).body,
        ),
      ).toEqual([]);
      const env = await api.post('/v1/environments', { name: 'staging', projectId: created.body.id }, owner);
      expect(violations(renderBody('post', '/environments', '201'), env.body)).toEqual([]);
      const moved = await api.post(
        `/v1/environments/${env.body.id}/resources`,
        { resourceIds: [deployed.service.id] },
        owner,
      );
      expect(moved.body.serviceIds).toEqual([deployed.service.id]);
      expect(violations(renderBody('post', '/environments/{environmentId}/resources'), moved.body)).toEqual([]);
      expect(
        violations(
          renderBody('patch', '/environments/{environmentId}'),
          (await api.patch(`/v1/environments/${env.body.id}`, { name: 'qa' }, owner)).body,
        ),
      ).toEqual([]);
      const lists = [
        await api.get('/v1/projects', owner),
        await api.get(`/v1/environments?projectId=${created.body.id}`, owner),
      ];
      expect(violations(renderBody('get', '/projects'), lists[0]!.body)).toEqual([]);
      expect(violations(renderBody('get', '/environments'), lists[1]!.body)).toEqual([]);
      for (const [list, key] of [
        [lists[0]!, 'project'],
        [lists[1]!, 'environment'],
      ] as const) {
        expect(list.body.length).toBeGreaterThan(0);
        for (const item of list.body) expect(Object.keys(item).sort()).toEqual(['cursor', key].sort());
      }
      expect(
        (await api.delete(`/v1/environments/${env.body.id}/resources?resourceIds=${deployed.service.id}`, owner))
          .status,
      ).toBe(204);
    });
  });
});
