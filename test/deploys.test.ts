import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { deployFixture, finished, packFixture, processesOf, upload, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { rawTarGz } from './helpers/hostile.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

const t = useServer();
const router = (slug: string, path = '/', opts = {}) => viaRouter(t.server.slipway.routerPort, slug, path, opts);

describe('deploys of uploaded archives', () => {
  it('builds, runs and routes a Node app, with platform and service env, through the router', async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'node-web', {
      envVars: [{ key: 'GREETING', value: 'hello' }],
      serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
    });
    expect(deploy).toMatchObject({ status: 'live', trigger: 'new_commit', finishedAt: expect.any(String) });
    const res = await router(service.slug, '/hello');
    expect(res.status).toBe(200);
    const body = res.json();
    expect(body.env).toMatchObject({
      GREETING: 'hello',
      SLIPWAY: 'true',
      SLIPWAY_SERVICE_ID: service.id,
      SLIPWAY_DEPLOY_ID: deploy.id,
      SLIPWAY_SERVICE_TYPE: 'web_service',
      SLIPWAY_EXTERNAL_HOSTNAME: `${service.slug}.localhost`,
      PORT: expect.stringMatching(/^\d+$/),
    });
    expect(body.env.SLIPWAY_INSTANCE_ID).toMatch(new RegExp(`^${service.id}-`));
    expect(body.headers['x-forwarded-for']).toBeTruthy();
    expect(body.headers.host).toBe(`${service.slug}.localhost:${t.server.slipway.routerPort}`);
    // Nothing of Slipway's own environment leaks into the app.
    expect(
      Object.keys(body.env).filter(
        (k) => k.startsWith('SLIPWAY_') && !/^SLIPWAY_(SERVICE|EXTERNAL|INSTANCE|DEPLOY|GIT)/.test(k),
      ),
    ).toEqual([]);

    const unknown = await router('no-such-app');
    expect(unknown.status).toBe(404);
  });

  it('rolls back to an earlier artifact without rebuilding; a failed deploy leaves the previous one live', async () => {
    const owner = await signUp(t.api);
    const first = await deployFixture(t.api, owner, 'node-web', {}, { VERSION: 'v1' });
    const { service } = first;
    expect((await router(service.slug)).json().version).toBe('v1');

    const second = await upload(t.api, owner, service.id, await packFixture('node-web', { VERSION: 'v2' }));
    expect((await finished(t.api, owner, service.id, second.body.deployId)).status).toBe('live');
    expect((await router(service.slug)).json().version).toBe('v2');
    expect((await t.api.get(`/v1/services/${service.id}/deploys/${first.deploy.id}`, owner)).body.status).toBe(
      'deactivated',
    );

    // A broken build: the previous deploy keeps serving.
    const broken = await upload(t.api, owner, service.id, await packFixture('crash-on-start'));
    const failed = await finished(t.api, owner, service.id, broken.body.deployId);
    expect(failed.status).toBe('update_failed');
    expect(failed.failureReason).toMatch(/healthy|exited/);
    expect((await router(service.slug)).json().version).toBe('v2');

    const rollback = await t.api.post(`/v1/services/${service.id}/rollback`, { deployId: first.deploy.id }, owner);
    expect(rollback.status).toBe(201);
    expect(rollback.body.trigger).toBe('rollback');
    const done = await finished(t.api, owner, service.id, rollback.body.id);
    expect(done.status).toBe('live');
    expect(done.buildOutput).toBeUndefined();
    expect((await router(service.slug)).json().version).toBe('v1');
    expect(
      (await t.api.post(`/v1/services/${service.id}/rollback`, { deployId: 'dep-00000000000000000000' }, owner)).status,
    ).toBe(404);

    const list = await t.api.get(`/v1/services/${service.id}/deploys?status=live`, owner);
    expect(list.body.map((i: any) => i.deploy.id)).toEqual([rollback.body.id]);
  });

  it('ends a deploy whose app never gets healthy as update_failed within the time limit', async () => {
    const owner = await signUp(t.api);
    const started = Date.now();
    const { deploy } = await deployFixture(t.api, owner, 'never-healthy');
    expect(deploy.status).toBe('update_failed');
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('serves a static site from its artifact and honours a Procfile web line', async () => {
    const owner = await signUp(t.api);
    const site = await deployFixture(
      t.api,
      owner,
      'static-site',
      { type: 'static_site', serviceDetails: { publishPath: 'public' } },
      {
        'src/app.js': 'source, not served',
        'node_modules/dep/index.js': 'a dependency',
        'public/assets/index-B4xK2a9f.js': 'console.log(1)',
      },
    );
    expect(site.deploy.status).toBe('live');
    // The artifact holds what the site serves, not its source.
    const artifact = path.join(t.server.dataDir, 'services', site.service.id, 'artifacts', site.deploy.id);
    expect(readdirSync(artifact)).toEqual(['public']);
    expect(readdirSync(path.join(artifact, 'public')).sort()).toEqual(['assets', 'index.html', 'style.css']);
    // A hashed asset may be kept a year; the rest is checked again at every use.
    const hashed = await router(site.service.slug, '/assets/index-B4xK2a9f.js');
    expect(hashed.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const page = await router(site.service.slug, '/');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Hello from a static site');
    expect(page.headers['cache-control']).toBe('public, max-age=0, must-revalidate');
    expect((await router(site.service.slug, '/style.css')).headers['content-type']).toMatch(/text\/css/);

    const proc = await deployFixture(t.api, owner, 'procfile-web');
    expect(proc.deploy.status).toBe('live');
    expect((await router(proc.service.slug)).text).toBe('procfile true');
  });

  it('suspends (503 page, processes stopped), resumes, and deletes without leaving processes', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web');
    expect(processesOf(service.id).length).toBeGreaterThan(0);
    const suspended = await t.api.post(`/v1/services/${service.id}/suspend`, undefined, owner);
    expect(suspended.status).toBe(202);
    expect(suspended.body).toMatchObject({ suspended: 'suspended', suspenders: ['user'] });
    const page = await router(service.slug);
    expect(page.status).toBe(503);
    expect(page.text).toMatch(/suspended/i);
    await waitFor('the instance to stop', async () => processesOf(service.id).length === 0);
    expect((await t.api.post(`/v1/services/${service.id}/deploys`, {}, owner)).status).toBe(409);

    const resumed = await t.api.post(`/v1/services/${service.id}/resume`, undefined, owner);
    expect(resumed.body).toMatchObject({ suspended: 'not_suspended', suspenders: [] });
    expect((await router(service.slug)).status).toBe(200);
    expect(processesOf(service.id).length).toBeGreaterThan(0);

    expect((await t.api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
    await waitFor('no process left', async () => processesOf(service.id).length === 0);
    expect((await router(service.slug)).status).toBe(404);
  });

  it('rejects hostile archives with 400 and keeps nothing; unsupported bodies get 415', async () => {
    const owner = await signUp(t.api);
    const { service } = (
      await t.api.post(
        '/v1/services',
        { type: 'web_service', name: 'hostile', autoDeploy: 'no', serviceDetails: { runtime: 'node' } },
        owner,
      )
    ).body;
    const tarSlip = rawTarGz([{ name: '../escape.txt', data: Buffer.from('pwned') }]);
    const res = await upload(t.api, owner, service.id, tarSlip);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('bad_request');
    expect((await upload(t.api, owner, service.id, Buffer.from('not an archive at all'))).status).toBe(400);
    expect(
      (
        await t.api.call('POST', `/v1/services/${service.id}/source/upload`, {
          ...owner,
          raw: 'x',
          headers: { 'content-type': 'text/plain' },
        })
      ).status,
    ).toBe(415);
    const { rows } = await t.server.slipway.store.executeSql('select id from sources where service_id = $1', [
      service.id,
    ]);
    expect(rows).toEqual([]);
    const ok = await upload(t.api, owner, service.id, await packFixture('node-web'));
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({
      id: expect.stringMatching(/^src-/),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      sizeBytes: expect.any(Number),
    });
    expect(ok.body.deployId).toBeUndefined(); // autoDeploy: no
  });

  it('deploy_only redeploys the live artifact, not the newest upload; an upload to a suspended service is kept, not deployed', async () => {
    const owner = await signUp(t.api);
    const site = { type: 'static_site', serviceDetails: { publishPath: 'public' } };
    const version = (v: string) => packFixture('static-site', { 'public/version.txt': v });
    const first = await deployFixture(t.api, owner, 'static-site', site, { 'public/version.txt': 'v1' });
    expect(first.deploy.status).toBe('live');
    const { service } = first;
    expect((await t.api.patch(`/v1/services/${service.id}`, { autoDeploy: 'no' }, owner)).status).toBe(200);
    const kept = await upload(t.api, owner, service.id, await version('v2'));
    expect(kept.status).toBe(201);
    expect(kept.body.deployId).toBeUndefined(); // autoDeploy: no

    const only = await t.api.post(`/v1/services/${service.id}/deploys`, { deployMode: 'deploy_only' }, owner);
    expect(only.status).toBe(201);
    expect(await finished(t.api, owner, service.id, only.body.id)).toMatchObject({
      status: 'live',
      sourceId: first.sourceId,
    });
    expect((await router(service.slug, '/version.txt')).text).toBe('v1');
    // A build takes the newest upload.
    const built = await t.api.post(`/v1/services/${service.id}/deploys`, { deployMode: 'build_and_deploy' }, owner);
    expect(await finished(t.api, owner, service.id, built.body.id)).toMatchObject({
      status: 'live',
      sourceId: kept.body.id,
    });
    expect((await router(service.slug, '/version.txt')).text).toBe('v2');

    // autoDeploy yes but suspended: the upload is kept for a later deploy, and none starts (no 409 either).
    expect((await t.api.patch(`/v1/services/${service.id}`, { autoDeploy: 'yes' }, owner)).status).toBe(200);
    expect((await t.api.post(`/v1/services/${service.id}/suspend`, undefined, owner)).status).toBe(202);
    const whileSuspended = await upload(t.api, owner, service.id, await version('v3'));
    expect(whileSuspended.status).toBe(201);
    expect(whileSuspended.body.deployId).toBeUndefined();
  });

  it('runs one deploy at a time: of several queued triggers only the newest runs', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web', {}, { VERSION: 'base' });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await t.api.post(`/v1/services/${service.id}/deploys`, {}, owner)).body.id);
    await finished(t.api, owner, service.id, ids[3]!);
    const statuses = await Promise.all(ids.map(async (id) => (await finished(t.api, owner, service.id, id)).status));
    // The newest is live; the ones still queued behind the first were canceled, never run.
    expect(statuses[3]).toBe('live');
    const earlier = statuses.slice(0, 3);
    expect(earlier.filter((st) => st === 'canceled').length).toBeGreaterThanOrEqual(2);
    expect(earlier.every((st) => st === 'canceled' || st === 'deactivated')).toBe(true);
  });

  it('keeps serving during a restart and a redeploy under constant load (0 failed requests)', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web', {
      serviceDetails: { runtime: 'node', numInstances: 2, healthCheckPath: '/healthz' },
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    let stop = false;
    let ok = 0;
    const failures: string[] = [];
    const before = new Set<string>();
    for (let i = 0; i < 4; i++) before.add((await router(service.slug)).json().instance);
    expect(before.size).toBe(2); // round robin across both instances (sampled before the load shares the turns)
    const load = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const r = await router(service.slug, '/?delay=5', { agent }).catch((e: Error) => ({
          status: 0,
          text: e.message,
        }));
        if (r.status === 200) ok++;
        else failures.push(`${r.status} ${r.text.slice(0, 80)}`);
      }
    });
    await new Promise((r) => setTimeout(r, 300)); // the load is flowing before the switch
    expect((await t.api.post(`/v1/services/${service.id}/restart`, undefined, owner)).status).toBe(200);
    const redeploy = await t.api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    expect((await finished(t.api, owner, service.id, redeploy.body.id)).status).toBe('live');
    stop = true;
    await Promise.all(load);
    agent.destroy();
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(50);
    const after = (await router(service.slug)).json().instance;
    expect(before.has(after)).toBe(false);
  });
});
