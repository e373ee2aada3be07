/**
 * Authorization, route by route, driven by the server's own OpenAPI document: every
 * operation a later issue adds is walked here automatically. An operation whose path has
 * a parameter this file has no fixture for fails the suite until one is added to
 * `fixtures` below.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packFixture, upload } from './helpers/apps.js';
import { multipart, packBlueprint } from './helpers/blueprints.js';
import { bootServer, type TestServer } from './helpers/server.js';
import {
  addMember,
  client,
  createApiKey,
  signUp,
  uniqueEmail,
  type Caller,
  type Client,
  type Reply,
  type TestUser,
} from './helpers/client.js';

type Access = 'public' | 'signed-in' | 'operator' | 'viewer' | 'developer' | 'admin' | 'owner';
interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  format?: string;
  minLength?: number;
  minimum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  items?: Schema;
}
interface Op {
  name: string;
  method: string;
  path: string;
  access: Access;
  isPublic: boolean;
  pathParams: string[];
  ownerIdQuery: boolean;
  requiredQuery: string[];
  body?: { contentType: string; schema?: Schema };
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const ACCESS: Access[] = ['public', 'signed-in', 'operator', 'viewer', 'developer', 'admin', 'owner'];

let server: TestServer;
let api: Client;
let doc: any;
let ops: Op[];
let ownerA: TestUser, viewer: TestUser, userB: TestUser, anon: TestUser;
/** A value in A's workspace for every path parameter name. Add one here when a new route needs it. */
let fixtures: Record<string, string>;

function operations(document: any): Op[] {
  const out: Op[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const method of ['get', 'put', 'post', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const params: any[] = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      const content = op.requestBody?.content ?? {};
      const contentType = content['application/json'] ? 'application/json' : Object.keys(content)[0];
      out.push({
        name: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        access: op['x-slipway-access'],
        isPublic: Array.isArray(op.security) && op.security.length === 0,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        ownerIdQuery: params.some((p) => p.in === 'query' && p.name === 'ownerId'),
        requiredQuery: params.filter((p) => p.in === 'query' && p.required).map((p) => p.name),
        body: op.requestBody
          ? { contentType: contentType ?? 'application/json', schema: content[contentType!]?.schema }
          : undefined,
      });
    }
  }
  return out;
}

/** A minimal valid value for `schema`; `overrides` supplies values by property name. */
function sample(schema: Schema, name: string, overrides: Record<string, unknown>): any {
  if (name in overrides) return overrides[name];
  if (schema.$ref)
    return sample(
      schema.$ref
        .slice(2)
        .split('/')
        .reduce((s: any, k) => s[k], doc),
      name,
      overrides,
    );
  if (name === 'role') return 'developer';
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf ?? schema.oneOf) return sample((schema.anyOf ?? schema.oneOf)![0]!, name, overrides);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s) => sample(s, name, overrides)));
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type ?? (schema.properties ? 'object' : undefined)) {
    case 'object':
      return Object.fromEntries(
        (schema.required ?? []).map((k) => [k, sample(schema.properties?.[k] ?? {}, k, overrides)]),
      );
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items ?? {}, name, overrides));
    case 'integer':
    case 'number':
      return schema.exclusiveMinimum !== undefined ? Math.floor(schema.exclusiveMinimum) + 1 : (schema.minimum ?? 1);
    case 'boolean':
      return false;
    case 'string':
      if (schema.format === 'email') return uniqueEmail('authz');
      if (schema.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
      if (schema.format === 'uri') return 'https://example.com/return';
      return 'x'.repeat(Math.max(schema.minLength ?? 1, 1));
    default:
      throw new Error(`cannot build a value for ${name || 'the body'}: ${JSON.stringify(schema)}`);
  }
}

/** Path parameters that name a kind of thing rather than one of A's resources. */
// orgId: the installation (its operator's), no workspace's: members get a 403 there, A's or not.
const NOT_RESOURCES = new Set(['provider', 'orgId']);
const missingFixtures = (op: Op) => op.pathParams.filter((p) => fixtures[p] === undefined);

/** Calls `op` as `as`, acting in workspace `ownerId` when given (query and/or body). */
function send(
  op: Op,
  as: Caller,
  opts: { ownerId?: string; overrides?: Record<string, unknown> } = {},
): Promise<Reply> {
  const missing = missingFixtures(op);
  if (missing.length)
    throw new Error(
      `${op.name}: no fixture for path parameter(s) ${missing.join(', ')}; add them to \`fixtures\` in test/authz.test.ts`,
    );
  let url = op.path.replace(/\{(\w+)\}/g, (_, p: string) => encodeURIComponent(fixtures[p]!));
  // Required query parameters and body fields named like a path parameter get its fixture (an id in A's workspace).
  const query = [
    ...op.requiredQuery.map((q) => [q, fixtures[q] ?? 'x']),
    ...(opts.ownerId && op.ownerIdQuery ? [['ownerId', opts.ownerId]] : []),
  ];
  if (query.length) url += `?${new URLSearchParams(query)}`;
  if (!op.body) return api.call(op.method, url, as);
  if (op.body.contentType !== 'application/json')
    return api.call(op.method, url, { ...as, raw: 'x', headers: { 'content-type': op.body.contentType } });
  const body = sample(op.body.schema ?? { type: 'object' }, '', { ...fixtures, ...opts.overrides });
  if (opts.ownerId && op.body.schema?.properties?.ownerId) body.ownerId = opts.ownerId;
  return api.call(op.method, url, { ...as, body });
}

/** '' when `res` is the error `status`/`code` in the §5 shape, else a line describing what came back. */
function errorMismatch(what: string, res: Reply, status: number, code: string): string {
  const b = res.body;
  const ok =
    res.status === status &&
    b?.code === code &&
    typeof b.message === 'string' &&
    b.id === res.headers.get('request-id') &&
    typeof b.id === 'string';
  return ok ? '' : `${what}: expected ${status} ${code}, got ${res.status} ${res.text.slice(0, 200)}`;
}

beforeAll(async () => {
  // A's log stream points at a loopback address (no DNS here); nothing listens there, and nothing needs to.
  server = await bootServer({ SLIPWAY_LOG_STREAM_ALLOW_PRIVATE: '1', SLIPWAY_METRICS_STREAM_ALLOW_PRIVATE: '1' });
  api = client(server.url);
  doc = (await api.get('/v1/openapi.json')).body;
  ops = operations(doc);
  [ownerA, userB, anon] = await Promise.all([signUp(api), signUp(api), signUp(api)]);
  viewer = await addMember(api, ownerA, 'viewer');
  const key = await createApiKey(api, ownerA, 'fixture key');
  const invite = async () => {
    const res = await api.post('/v1/team-invites', { email: uniqueEmail('pending'), role: 'developer' }, ownerA);
    if (res.status !== 201) throw new Error(`invite failed: ${res.status} ${res.text}`);
    return res.body as { id: string; token: string };
  };
  const [invA, invB] = [await invite(), await invite()];
  const service = await api.post(
    '/v1/services',
    {
      type: 'static_site',
      name: 'authz-site',
      envVars: [{ key: 'FIXTURE', value: 'x' }],
      serviceDetails: { publishPath: 'public' },
    },
    ownerA,
  );
  if (service.status !== 201) throw new Error(`service failed: ${service.status} ${service.text}`);
  const source = await upload(api, ownerA, service.body.service.id, await packFixture('static-site'));
  if (source.status !== 201) throw new Error(`upload failed: ${source.status} ${source.text}`);
  // A's log stream, an override of its service's and its metrics stream, so a viewer's reads find something to read.
  for (const [url, body] of [
    [`/v1/logs/streams/owner/${ownerA.workspaceId}`, { endpoint: '127.0.0.1:6514', token: 'authz', preview: 'send' }],
    [`/v1/logs/streams/resource/${service.body.service.id}`, { setting: 'drop' }],
    [`/v1/metrics-stream/${ownerA.workspaceId}`, { url: 'http://127.0.0.1:4318', token: 'authz' }],
  ] as const) {
    const res = await api.put(url, body, ownerA);
    if (res.status !== 200) throw new Error(`stream failed: ${res.status} ${res.text}`);
  }
  const group = await api.post(
    '/v1/env-groups',
    { name: 'authz-group', envVars: [{ key: 'FIXTURE', value: 'x' }], serviceIds: [service.body.service.id] },
    ownerA,
  );
  if (group.status !== 201) throw new Error(`env group failed: ${group.status} ${group.text}`);
  const project = await api.post(
    '/v1/projects',
    { name: 'authz-project', environments: [{ name: 'production' }] },
    ownerA,
  );
  if (project.status !== 201) throw new Error(`project failed: ${project.status} ${project.text}`);
  // Datastores (real servers start in the background; nothing here waits for them).
  const postgres = await api.post('/v1/postgres', { name: 'authz-db', plan: 'free' }, ownerA);
  const keyValue = await api.post('/v1/key-value', { name: 'authz-kv', plan: 'free' }, ownerA);
  if (postgres.status !== 201 || keyValue.status !== 201)
    throw new Error(`datastores failed: ${postgres.text} ${keyValue.text}`);
  // Disabled: nothing is delivered to it while the sweep records events.
  const domain = await api.post(
    `/v1/services/${service.body.service.id}/custom-domains`,
    { name: `authz-${Date.now().toString(36)}.com` },
    ownerA,
  );
  expect(domain.status).toBe(201);
  const siteId = service.body.service.id;
  const header = await api.post(`/v1/services/${siteId}/headers`, { path: '/*', name: 'X-A', value: '1' }, ownerA);
  const route = await api.post(
    `/v1/services/${siteId}/routes`,
    { type: 'redirect', source: '/a', destination: '/b' },
    ownerA,
  );
  if (header.status !== 201 || route.status !== 201) throw new Error(`rules failed: ${header.text} ${route.text}`);
  const webhook = await api.post(
    '/v1/webhooks',
    { name: 'authz-hook', url: 'https://hooks.example.com/slipway', enabled: false, eventFilter: [] },
    ownerA,
  );
  if (webhook.status !== 201) throw new Error(`webhook failed: ${webhook.status} ${webhook.text}`);
  const credential = await api.post(
    '/v1/registrycredentials',
    { registry: 'GITHUB', name: 'authz-credential', username: 'octocat', authToken: 'ghp_authz' },
    ownerA,
  );
  if (credential.status !== 200) throw new Error(`registry credential failed: ${credential.status} ${credential.text}`);
  const blueprint = await api.call('POST', '/v1/blueprints', {
    ...ownerA,
    ...(await multipart(
      { name: 'authz-blueprint' },
      await packBlueprint('envVarGroups:\n  - name: authz-bp-group\n    envVars:\n      - key: A\n        value: b\n'),
    )),
  });
  if (blueprint.status !== 201) throw new Error(`blueprint failed: ${blueprint.status} ${blueprint.text}`);
  const cron = await api.post(
    '/v1/services',
    {
      type: 'cron_job',
      name: 'authz-cron',
      autoDeploy: 'no',
      serviceDetails: { runtime: 'node', schedule: '0 3 * * *' },
    },
    ownerA,
  );
  if (cron.status !== 201) throw new Error(`cron job failed: ${cron.status} ${cron.text}`);
  // A job of A's site, written as one that ended (a site runs none; test/jobs.test.ts runs real ones).
  const jobId = 'job-00000000000000000000';
  await server.slipway.store.executeSql(
    `insert into jobs (id, service_id, workspace_id, deploy_id, start_command, plan, status)
     values ($1, $2, $3, $4, 'true', 'starter', 'failed')`,
    [jobId, service.body.service.id, ownerA.workspaceId, source.body.deployId],
  );
  // A disk of A's site, written as a row (a site has none; test/disks.test.ts mounts real ones).
  const diskId = 'dsk-00000000000000000000';
  await server.slipway.store.executeSql(
    `insert into disks (id, workspace_id, service_id, name, size_gb, mount_path) values ($1, $2, $3, 'authz', 1, '/var/data')`,
    [diskId, ownerA.workspaceId, service.body.service.id],
  );
  const events = await api.get(
    `/v1/services/${service.body.service.id}/events?limit=1&includeSlipwayEvents=true`,
    ownerA,
  );
  if (events.status !== 200 || !events.body[0]) throw new Error(`events failed: ${events.status} ${events.text}`);
  fixtures = {
    eventId: events.body[0].event.id,
    blueprintId: blueprint.body.blueprint.id,
    postgresId: postgres.body.id,
    keyValueId: keyValue.body.id,
    redisId: keyValue.body.id, // the deprecated /v1/redis aliases of the key-value routes
    // A's database's export and extra user (none exist: a viewer's download is still a 403, B's a 404).
    exportId: 'exp-00000000000000000000',
    username: 'authz_user',
    secretFileName: 'authz.txt',
    jobId,
    cronJobId: cron.body.service.id,
    envGroupId: group.body.id,
    webhookId: webhook.body.id,
    registryCredentialId: credential.body.id,
    diskId,
    projectId: project.body.id,
    environmentId: project.body.environmentIds[0],
    apiKeyId: key.id,
    ownerId: ownerA.workspaceId,
    userId: viewer.id,
    inviteId: invA.id,
    token: invB.token,
    serviceId: service.body.service.id,
    resourceId: service.body.service.id, // a log stream override's resource
    deployId: source.body.deployId,
    envVarKey: 'FIXTURE',
    // Not one of A's resources: a kind of sign-in (GET …/oauth/{provider}/link acts on the caller's own account).
    customDomainIdOrName: domain.body[0].id,
    headerId: header.body.headers.id,
    routeId: route.body.id,
    provider: 'github',
    // An identity id: none of A's exist without a provider; test/oauth.test.ts covers another user's real one.
    identityId: 'idn-00000000000000000000',
    orgId: 'org-slipway', // this installation as Render's organization (the operator's audit log)
    label: 'level', // required query of GET /v1/logs/values
    metric: 'cpu', // required query of GET /v1/services/{serviceId}/metrics/history
  };
});
afterAll(() => server?.close());

describe('authorization on every operation of /v1/openapi.json', () => {
  it('walks a real route list, each operation publishing a known access level', () => {
    expect(ops.length).toBeGreaterThan(10);
    expect(ops.map((o) => o.name)).toEqual(
      expect.arrayContaining(['GET /v1/users', 'DELETE /v1/api-keys/{apiKeyId}', 'POST /v1/auth/login']),
    );
    for (const op of ops) {
      expect(ACCESS, `${op.name} x-slipway-access`).toContain(op.access);
      expect(op.isPublic, `${op.name}: security: [] exactly when public`).toBe(op.access === 'public');
    }
  });

  it('never lets an unsafe operation be viewer-level (viewers only read)', () => {
    expect(ops.filter((o) => UNSAFE.has(o.method) && o.access === 'viewer').map((o) => o.name)).toEqual([]);
  });

  it("has a fixture in A's workspace for every path parameter", () => {
    const missing = ops.flatMap((o) => missingFixtures(o).map((p) => `${o.name}: {${p}}`));
    expect(missing, 'add a value for these path parameters to `fixtures` in test/authz.test.ts').toEqual([]);
  });

  it('answers 401 unauthorized without credentials, except on public operations', async () => {
    const failures: string[] = [];
    for (const op of ops) {
      // Public bodies are filled with a real account's credentials so that login succeeds:
      // a wrong password is a legitimate 401 of its own, not a demand for credentials.
      const res = await send(op, {}, { overrides: op.isPublic ? { email: anon.email, password: anon.password } : {} });
      if (op.isPublic) {
        if (res.status === 401) failures.push(`${op.name} is public but answered 401 ${res.text.slice(0, 200)}`);
      } else failures.push(errorMismatch(op.name, res, 401, 'unauthorized'));
    }
    expect(failures.filter(Boolean)).toEqual([]);
  });

  it('lets a viewer read but never write in its workspace (403 forbidden)', async () => {
    const failures: string[] = [];
    for (const op of ops) {
      if (op.isPublic || op.access === 'signed-in') continue; // not role-gated
      const res = await send(op, viewer, { ownerId: ownerA.workspaceId });
      if (UNSAFE.has(op.method) || op.access !== 'viewer') failures.push(errorMismatch(op.name, res, 403, 'forbidden'));
      else if ([401, 403, 404].includes(res.status))
        failures.push(`${op.name}: a viewer may read this, got ${res.status} ${res.text.slice(0, 200)}`);
    }
    expect(failures.filter(Boolean)).toEqual([]);
  });

  it("answers 404 not_found to a member of another workspace for A's resources, never 200 or 403", async () => {
    const failures: string[] = [];
    for (const op of ops) {
      if (op.isPublic) continue;
      const actsIn = op.ownerIdQuery || Boolean(op.body?.schema?.properties?.ownerId);
      if (op.pathParams.some((p) => !NOT_RESOURCES.has(p))) {
        // A's ids, from B's own workspace and (where the operation takes ownerId) naming A's.
        failures.push(errorMismatch(op.name, await send(op, userB), 404, 'not_found'));
      }
      if (actsIn)
        failures.push(
          errorMismatch(
            `${op.name} (ownerId=A)`,
            await send(op, userB, { ownerId: ownerA.workspaceId }),
            404,
            'not_found',
          ),
        );
    }
    expect(failures.filter(Boolean)).toEqual([]);
  });
});
