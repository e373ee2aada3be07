/**
 * Blueprint syncs end to end: an uploaded archive with a render.yaml becomes running services, wired as the file says,
 * answering through the router; a second sync of the same file changes nothing; a changed file changes what it says.
 */
import { describe, expect, it } from 'vitest';
import { viaRouter } from './helpers/apps.js';
import { allDeploysSettled, createUploaded, servicesByName, syncEnded, uploadTo } from './helpers/blueprints.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();

const WORKER = `  - type: worker
    name: bp-worker
    runtime: node
    startCommand: node worker.js
`;

export const APP_YAML = `
envVarGroups:
  - name: shared-settings
    envVars:
      - key: GROUP_VAR
        value: from-the-group
      - key: SECRET_TOKEN
        generateValue: true
services:
  - type: web
    name: bp-web
    runtime: node
    startCommand: node server.js
    healthCheckPath: /healthz
    buildFilter:
      paths:
        - src/**
      ignoredPaths:
        - docs/**
    envVars:
      - key: GREETING
        value: hello
      - fromGroup: shared-settings
      - key: OTHER_HOSTPORT
        fromService:
          name: bp-private
          type: pserv
          property: hostport
  - type: pserv
    name: bp-private
    runtime: node
    startCommand: node server.js
${WORKER}  - type: cron
    name: bp-cron
    runtime: node
    schedule: "*/5 * * * *"
    startCommand: node -e "console.log('cron ran')"
  - type: web
    name: bp-static
    runtime: static
    staticPublishPath: ./public
    headers:
      - path: /*
        name: X-Frame-Options
        value: DENY
    routes:
      - type: redirect
        source: /old/*
        destination: /new/*
      - type: rewrite
        source: /*
        destination: /index.html
`;

describe('a blueprint from an uploaded archive', () => {
  it('creates and deploys every resource, wired as the file says, and a second sync changes nothing', async () => {
    const owner = await signUp(t.api);
    const created = await createUploaded(t.api, owner, 'shop', APP_YAML);
    expect(created.status).toBe(201);
    const { blueprint, sync } = created.body;
    expect(blueprint).toMatchObject({ name: 'shop', status: 'syncing', autoSync: true, repo: '', path: 'render.yaml' });
    expect(blueprint.id).toMatch(/^exs-[0-9a-v]{20}$/);
    expect(sync).toMatchObject({ state: 'running' });
    expect(sync.id).toMatch(/^exe-[0-9a-v]{20}$/);

    const first = await syncEnded(t.api, owner, blueprint.id, sync.id);
    expect(first.error).toBeUndefined();
    expect(first.state).toBe('success');
    expect(first.commit.id).toMatch(/^[0-9a-f]{64}$/); // the archive's SHA-256
    const byName = new Map(first.resources.map((r: any) => [r.name, r]));
    expect(byName.get('shared-settings')).toMatchObject({ kind: 'envGroup', action: 'created' });
    for (const name of ['bp-web', 'bp-private', 'bp-worker', 'bp-cron', 'bp-static'])
      expect(byName.get(name)).toMatchObject({ kind: 'service', action: 'created', deployId: expect.any(String) });

    const deploys = await allDeploysSettled(t.api, owner);
    expect(deploys.map((d) => [d.serviceName, d.status]).sort()).toEqual(
      ['bp-cron', 'bp-private', 'bp-static', 'bp-web', 'bp-worker'].map((n) => [n, 'live']),
    );
    const services = await servicesByName(t.api, owner);
    expect(services.get('bp-web')).toMatchObject({
      type: 'web_service',
      buildFilter: { paths: ['src/**'], ignoredPaths: ['docs/**'] },
    });
    expect(services.get('bp-private')).toMatchObject({ type: 'private_service' });
    expect(services.get('bp-worker')).toMatchObject({ type: 'background_worker' });
    expect(services.get('bp-cron')).toMatchObject({ type: 'cron_job' });
    expect(services.get('bp-static')).toMatchObject({ type: 'static_site' });

    const routerPort = t.server.slipway.routerPort;
    const web = (await viaRouter(routerPort, services.get('bp-web').slug, '/')).json();
    expect(web).toMatchObject({
      GREETING: 'hello',
      GROUP_VAR: 'from-the-group',
      OTHER_HOSTPORT: `${services.get('bp-private').slug}:10000`,
    });
    expect(web.SECRET_TOKEN).toMatch(/^[A-Za-z0-9_-]{32}$/);
    // The static site's rules: a file is served as it is, a path no file has is rewritten or redirected, and the
    // header rule is on every answer.
    const site = services.get('bp-static').slug;
    const page = await viaRouter(routerPort, site, '/index.html');
    expect(page.text).toContain('static from a blueprint');
    expect(page.headers['x-frame-options']).toBe('DENY');
    const deep = await viaRouter(routerPort, site, '/app/settings/42');
    expect([deep.status, deep.headers['x-frame-options']]).toEqual([200, 'DENY']);
    expect(deep.text).toContain('static from a blueprint');
    const moved = await viaRouter(routerPort, site, '/old/a/b');
    expect([moved.status, moved.headers.location]).toEqual([301, '/new/a/b']);

    // The blueprint lists what it manages, in Render's shape.
    const got = await t.api.get(`/v1/blueprints/${blueprint.id}`, owner);
    expect(got.body.status).toBe('in_sync');
    expect(got.body.lastSync).toEqual(first.completedAt);
    expect(got.body.resources.map((r: any) => [r.name, r.type]).sort()).toEqual([
      ['bp-cron', 'cron_job'],
      ['bp-private', 'private_service'],
      ['bp-static', 'static_site'],
      ['bp-web', 'web_service'],
      ['bp-worker', 'background_worker'],
      ['shared-settings', 'environment_group'],
    ]);

    // Each managed resource's body names its blueprint.
    const managed = { id: blueprint.id, name: 'shop' };
    expect((await t.api.get(`/v1/services/${services.get('bp-web').id}`, owner)).body.blueprint).toEqual(managed);
    const groupId = (byName.get('shared-settings') as any).id;
    expect((await t.api.get(`/v1/env-groups/${groupId}`, owner)).body.blueprint).toEqual(managed);
    for (const name of ['bp-web', 'bp-private', 'bp-worker', 'bp-cron', 'bp-static'])
      expect(services.get(name).blueprint, name).toEqual(managed); // lists say it too
    const groups = await t.api.get('/v1/env-groups', owner);
    expect(groups.body.map((g: any) => g.blueprint)).toEqual([managed]);

    // Unchanged file: nothing changes and nothing deploys.
    const again = await t.api.post(`/v1/blueprints/${blueprint.id}/sync`, {}, owner);
    expect(again.status).toBe(202);
    const second = await syncEnded(t.api, owner, blueprint.id, again.body.id);
    expect(second.state).toBe('success');
    expect(second.resources.map((r: any) => r.action)).toEqual(second.resources.map(() => 'unchanged'));
    expect((await allDeploysSettled(t.api, owner)).length).toBe(deploys.length);
    const web2 = (await viaRouter(routerPort, services.get('bp-web').slug, '/')).json();
    expect(web2.SECRET_TOKEN).toBe(web.SECRET_TOKEN); // generated once

    // A field changed through the API is put back by the next sync (the file manages it).
    const patched = await t.api.patch(
      `/v1/services/${services.get('bp-web').id}`,
      { serviceDetails: { healthCheckPath: '/' }, buildFilter: { paths: ['other/**'] } },
      owner,
    );
    expect(patched.body.buildFilter).toEqual({ paths: ['other/**'], ignoredPaths: [] }); // replaced whole
    const third = await t.api.post(`/v1/blueprints/${blueprint.id}/sync`, {}, owner);
    const putBack = await syncEnded(t.api, owner, blueprint.id, third.body.id);
    expect(putBack.resources.find((r: any) => r.name === 'bp-web')).toMatchObject({ action: 'updated' });
    const after = await t.api.get(`/v1/services/${services.get('bp-web').id}`, owner);
    expect(after.body.serviceDetails.healthCheckPath).toBe('/healthz');
    expect(after.body.buildFilter).toEqual({ paths: ['src/**'], ignoredPaths: ['docs/**'] });
  });

  it('a new upload (autoSync) applies a changed file: changed values deploy, a removed service is detached, not deleted', async () => {
    const owner = await signUp(t.api);
    const created = await createUploaded(t.api, owner, 'changing', APP_YAML);
    expect(created.status).toBe(201);
    const bp = created.body.blueprint;
    await syncEnded(t.api, owner, bp.id, created.body.sync.id);
    const before = await allDeploysSettled(t.api, owner);

    // Also: the header rule's value changes, and the route rules are gone from the file (so they are kept).
    const changed = APP_YAML.replace('value: hello', 'value: bonjour')
      .replace(WORKER, '')
      .replace('value: DENY', 'value: SAMEORIGIN')
      .replace('      ignoredPaths:\n        - docs/**\n', '')
      .replace(/ {4}routes:\n(?: {6}.*\n| {8}.*\n)+/, '');
    expect(changed).not.toContain('routes:');
    // Two rules added through the API that share a path and a name, which the file never names: both stay.
    const staticId = (await servicesByName(t.api, owner)).get('bp-static').id;
    for (const value of ['</a.css>; rel=preload', '</b.js>; rel=preload'])
      expect(
        (await t.api.post(`/v1/services/${staticId}/headers`, { path: '/*', name: 'Link', value }, owner)).status,
      ).toBe(201);
    const up = await uploadTo(t.api, owner, bp.id, changed);
    expect(up.status).toBe(200);
    expect(up.body.sync).toMatchObject({ state: 'running' });
    const sync = await syncEnded(t.api, owner, bp.id, up.body.sync.id);
    expect(sync.state).toBe('success');
    // A new archive is every archive-sourced service's new source: each deploys it.
    const after = await allDeploysSettled(t.api, owner);
    expect(after.filter((d) => d.serviceName === 'bp-web' && d.status === 'live')).toHaveLength(1);
    expect(after.length).toBe(before.length + 4); // web, pserv, cron, static: not the detached worker

    const services = await servicesByName(t.api, owner);
    const web = (await viaRouter(t.server.slipway.routerPort, services.get('bp-web').slug, '/')).json();
    expect(web.GREETING).toBe('bonjour');
    // buildFilter is replaced whole: the ignored paths the file no longer lists are gone.
    expect(services.get('bp-web').buildFilter).toEqual({ paths: ['src/**'], ignoredPaths: [] });
    const deep = await viaRouter(t.server.slipway.routerPort, services.get('bp-static').slug, '/any/where');
    expect([deep.status, deep.headers['x-frame-options']]).toEqual([200, 'SAMEORIGIN']);
    const links = (await t.api.get(`/v1/services/${staticId}/headers?name=Link`, owner)).body.map(
      (h: { header: { value: string } }) => h.header.value,
    );
    expect(links.sort()).toEqual(['</a.css>; rel=preload', '</b.js>; rel=preload']);
    // The worker is still there and still running, no longer managed.
    expect(services.get('bp-worker')).toBeDefined();
    const worker = await t.api.get(`/v1/services/${services.get('bp-worker').id}/instances`, owner);
    expect(worker.body.length).toBeGreaterThan(0);
    const got = await t.api.get(`/v1/blueprints/${bp.id}`, owner);
    expect(got.body.resources.map((r: any) => r.name)).not.toContain('bp-worker');
    const detached = await t.api.get(`/v1/services/${services.get('bp-worker').id}`, owner);
    expect(detached.body.blueprint).toBeUndefined();
    expect(services.get('bp-worker').blueprint).toBeUndefined();
    expect((await t.api.get(`/v1/services/${services.get('bp-web').id}`, owner)).body.blueprint).toEqual({
      id: bp.id,
      name: 'changing',
    });
  });
});
