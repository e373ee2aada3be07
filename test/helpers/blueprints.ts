import { packFixture } from './apps.js';
import type { Caller, Client, TestUser } from './client.js';
import { waitFor } from './process.js';

/** A multipart body of `fields` then the archive as `file`, as a browser's form would send it. */
export async function multipart(fields: Record<string, string>, archive: Uint8Array) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([new Uint8Array(archive)], { type: 'application/gzip' }), 'source.tgz');
  const res = new Response(form);
  return {
    raw: new Uint8Array(await res.arrayBuffer()),
    headers: { 'content-type': res.headers.get('content-type')! },
  };
}

/** POST /v1/blueprints/validate of `text` as the user's workspace, as Render's CLI sends it (multipart). */
export async function validateFile(serverUrl: string, user: TestUser, text: string) {
  const form = new FormData();
  form.append('ownerId', user.workspaceId);
  form.append('file', new Blob([text]), 'render.yaml');
  const res = await fetch(`${serverUrl}/v1/blueprints/validate`, {
    method: 'POST',
    body: form,
    headers: { cookie: `slipway_session=${user.cookie}`, 'x-requested-with': 't' },
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** The blueprint-app fixture with this render.yaml (and any other file replaced), packed. */
export const packBlueprint = (yaml: string, extra: Record<string, string> = {}) =>
  packFixture('blueprint-app', { 'render.yaml': yaml, ...extra });

/** POST /v1/blueprints from an uploaded archive. */
export async function createUploaded(
  api: Client,
  as: Caller,
  name: string,
  yaml: string,
  extra: Record<string, string> = {},
) {
  const body = await multipart({ name }, await packBlueprint(yaml, extra));
  return api.call('POST', '/v1/blueprints', { ...as, ...body });
}

/** A newer archive for an uploaded blueprint. */
export async function uploadTo(api: Client, as: Caller, blueprintId: string, yaml: string) {
  const body = await multipart({}, await packBlueprint(yaml));
  return api.call('POST', `/v1/blueprints/${blueprintId}/upload`, { ...as, ...body });
}

/** Polls the blueprint's syncs until `syncId` ends; returns it. */
export function syncEnded(api: Client, as: Caller, blueprintId: string, syncId: string, timeoutMs = 60_000) {
  return waitFor(
    `sync ${syncId} to end`,
    async () => {
      const res = await api.get(`/v1/blueprints/${blueprintId}/syncs?limit=100`, as);
      const sync = res.body?.find((i: any) => i.sync.id === syncId)?.sync;
      return sync && sync.state !== 'running' ? sync : undefined;
    },
    timeoutMs,
    50,
  );
}

/** The workspace's services by name. */
export async function servicesByName(api: Client, as: Caller) {
  const res = await api.get('/v1/services?limit=100', as);
  return new Map<string, any>(res.body.map((i: any) => [i.service.name, i.service]));
}

/** Every deploy of the workspace's services that is not live or deactivated yet, waited for; returns all deploys. */
export async function allDeploysSettled(api: Client, as: Caller, timeoutMs = 90_000) {
  const done = new Set(['live', 'deactivated', 'build_failed', 'pre_deploy_failed', 'update_failed', 'canceled']);
  return waitFor(
    'deploys to settle',
    async () => {
      const all: any[] = [];
      for (const service of (await servicesByName(api, as)).values()) {
        const res = await api.get(`/v1/services/${service.id}/deploys?limit=100`, as);
        all.push(...res.body.map((i: any) => ({ ...i.deploy, serviceName: service.name })));
      }
      return all.every((d) => done.has(d.status)) ? all : undefined;
    },
    timeoutMs,
    100,
  );
}

/**
 * A database and a web service that reads it. A sync of it waits for the new database before deploying: a window of
 * a second or so in which the sync is known to be running (`untilWaitingOnDatabase`), for tests that act during one.
 */
export const NOTES_YAML = `
databases:
  - name: notes-db
    plan: free
services:
  - type: web
    name: notes
    runtime: node
    startCommand: node server.js
    healthCheckPath: /healthz
    envVars:
      - key: DATABASE_URL
        fromDatabase:
          name: notes-db
          property: connectionString
`;

/** Until the blueprint's newest sync has placed its database and is still running. */
export const untilWaitingOnDatabase = (api: Client, as: Caller, blueprintId: string) =>
  waitFor(
    'the sync to have placed the database and still run',
    async () => {
      const sync = (await api.get(`/v1/blueprints/${blueprintId}/syncs`, as)).body[0]?.sync;
      return sync?.state === 'running' && sync.resources.some((r: any) => r.kind === 'postgres');
    },
    20_000,
    10,
  );
