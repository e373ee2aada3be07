import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { deployFixture, finished, packFixture, processesOf, upload, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

const t = useServer({
  SLIPWAY_BUILD_TIMEOUT_SECONDS: '3',
  SLIPWAY_KEEP_ARTIFACTS: '2',
  SLIPWAY_MAX_UPLOAD_BYTES: String(256 * 1024),
});
const router = (slug: string) => viaRouter(t.server.slipway.routerPort, slug);
const trigger = async (owner: { cookie: string }, serviceId: string) =>
  (await t.api.post(`/v1/services/${serviceId}/deploys`, {}, owner)).body;

describe('the deploy lifecycle', () => {
  it('runs npm run build before start, and records the build output', async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'node-build');
    expect(deploy.status).toBe('live');
    expect(deploy.buildOutput).toContain('build step done');
    expect((await router(service.slug)).text).toMatch(/^built at /);
  });

  it('accepts a multipart upload and records its SHA-256', async () => {
    const owner = await signUp(t.api);
    const { service } = (
      await t.api.post(
        '/v1/services',
        { type: 'web_service', name: 'multipart', autoDeploy: 'no', serviceDetails: { runtime: 'node' } },
        owner,
      )
    ).body;
    const archive = await packFixture('node-web');
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(archive)]), 'app.tgz');
    const res = await fetch(`${t.server.url}/v1/services/${service.id}/source/upload`, {
      method: 'POST',
      body: form,
      headers: { cookie: `slipway_session=${owner.cookie}`, 'x-requested-with': 't' },
    });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(body.sha256).toBe(createHash('sha256').update(archive).digest('hex'));
    expect(body.sizeBytes).toBe(archive.length);
  });

  it('ends a hanging build as build_failed at the time limit, and cancels a running one on request', async () => {
    const owner = await signUp(t.api);
    const started = Date.now();
    const { service, deploy: timedOut } = await deployFixture(t.api, owner, 'node-web', {
      serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand: 'sleep 30' } },
    });
    expect(timedOut.status).toBe('build_failed');
    expect(timedOut.failureReason).toMatch(/within 3 s/);
    expect(Date.now() - started).toBeLessThan(15_000);

    const running = await trigger(owner, service.id);
    await waitFor(
      'the build to start',
      async () =>
        (await t.api.get(`/v1/services/${service.id}/deploys/${running.id}`, owner)).body.status ===
        'build_in_progress',
    );
    const canceled = await t.api.post(`/v1/services/${service.id}/deploys/${running.id}/cancel`, undefined, owner);
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe('canceled');
    expect((await t.api.post(`/v1/services/${service.id}/deploys/${running.id}/cancel`, undefined, owner)).status).toBe(
      409,
    );
  });

  it('fails a deploy whose pre-deploy command fails, keeping the previous deploy live (output with NUL bytes too)', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web', {}, { VERSION: 'v1' });
    // Postgres text cannot hold a NUL: the build's kept output and the failure reason store it as U+FFFD.
    await t.api.patch(
      `/v1/services/${service.id}`,
      {
        serviceDetails: {
          preDeployCommand: `printf 'migrating\\0\\n'; exit 3`,
          envSpecificDetails: { buildCommand: `printf 'built\\0\\n'` },
        },
      },
      owner,
    );
    const up = await upload(t.api, owner, service.id, await packFixture('node-web', { VERSION: 'v2' }));
    const failed = await finished(t.api, owner, service.id, up.body.deployId);
    expect(failed.status).toBe('pre_deploy_failed');
    expect(failed.failureReason).toMatch(/migrating\uFFFD/);
    expect((await router(service.slug)).json().version).toBe('v1');
  });

  it('collects artifacts beyond the newest kept ones; rolling back to a collected one is a 409', async () => {
    const owner = await signUp(t.api);
    const { service, deploy: first } = await deployFixture(t.api, owner, 'node-web');
    for (let i = 0; i < 3; i++)
      expect((await finished(t.api, owner, service.id, (await trigger(owner, service.id)).id)).status).toBe('live');
    // Collection runs just after each deploy goes live: wait until the last one's has run (the first is
    // marked collected and no more than the kept artifacts are left), then check exactly what is left.
    const dir = path.join(t.server.dataDir, 'services', service.id, 'artifacts');
    const marked = async () =>
      (await t.server.slipway.store.executeSql(`select artifact_deleted from deploys where id = $1`, [first.id]))
        .rows[0]?.artifact_deleted;
    await waitFor('artifact collection', async () => (await marked()) && readdirSync(dir).length <= 2);
    const artifacts = readdirSync(dir);
    expect(artifacts).toHaveLength(2);
    expect(artifacts).not.toContain(first.id);
    const res = await t.api.post(`/v1/services/${service.id}/rollback`, { deployId: first.id }, owner);
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/garbage-collected/);
  });

  it('records every transition as a Render service event', async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'node-web');
    await t.api.post(`/v1/services/${service.id}/restart`, undefined, owner);
    const res = await t.api.get(`/v1/services/${service.id}/events?limit=100`, owner);
    expect(res.status).toBe(200);
    const types = res.body.map((i: any) => i.event.type);
    expect(types).toEqual(
      expect.arrayContaining(['server_restarted', 'deploy_ended', 'build_ended', 'build_started', 'deploy_started']),
    );
    const ended = res.body.find((i: any) => i.event.type === 'deploy_ended').event;
    expect(ended).toMatchObject({
      serviceId: service.id,
      details: { deployId: deploy.id, deployStatus: 'succeeded', finalStatus: 'live' },
      id: expect.stringMatching(/^evt-/),
    });
    const only = await t.api.get(`/v1/services/${service.id}/events?type=server_restarted`, owner);
    expect(only.body.map((i: any) => i.event.type)).toEqual(['server_restarted']);
  });

  it('runs a cron job on its schedule, recording each run and its exit status', async () => {
    const owner = await signUp(t.api);
    const cron = (name: string, startCommand: string) =>
      deployFixture(t.api, owner, 'worker', {
        type: 'cron_job',
        name,
        serviceDetails: { runtime: 'node', schedule: '*/1 * * * * *', envSpecificDetails: { startCommand } },
      });
    const ok = await cron('nightly', 'node -e "console.log(process.env.SLIPWAY_SERVICE_TYPE)"');
    const failing = await cron('broken', 'exit 3');
    expect([ok.deploy.status, failing.deploy.status]).toEqual(['live', 'live']);
    const runEnds = (serviceId: string) =>
      waitFor(
        `two runs of ${serviceId}`,
        async () => {
          const res = await t.api.get(`/v1/services/${serviceId}/events?type=cron_job_run_ended`, owner);
          return res.body.length >= 2 ? res.body.map((i: any) => i.event.details) : undefined;
        },
        15_000,
      );
    for (const d of await runEnds(ok.service.id))
      expect(d).toMatchObject({ status: 'successful', cronJobRunId: expect.stringMatching(/^srv-/) });
    for (const d of await runEnds(failing.service.id))
      expect(d).toMatchObject({ status: 'unsuccessful', reason: { nonZeroExit: 3 } });
    // Each run's output is stored before its dir is removed: every ended run has its line, labelled with the run's id.
    const ended = (
      await t.api.get(`/v1/services/${ok.service.id}/events?type=cron_job_run_ended&limit=100`, owner)
    ).body.map((i: any) => i.event.details.cronJobRunId);
    const lines = (await t.api.get(`/v1/logs?resource=${ok.service.id}&text=cron_job&limit=100`, owner)).body
      .logs as Array<{ labels: Array<{ name: string; value: string }> }>;
    const runsWithOutput = new Set(lines.map((l) => l.labels.find((x) => x.name === 'instance')?.value));
    for (const runId of ended) expect(runsWithOutput, runId).toContain(runId);
    // Suspended, it stops running.
    await t.api.post(`/v1/services/${ok.service.id}/suspend`, undefined, owner);
    const before = (await t.api.get(`/v1/services/${ok.service.id}/events?type=cron_job_run_started&limit=100`, owner))
      .body.length;
    await new Promise((r) => setTimeout(r, 2500));
    const after = (await t.api.get(`/v1/services/${ok.service.id}/events?type=cron_job_run_started&limit=100`, owner))
      .body.length;
    expect(after - before).toBeLessThanOrEqual(1); // at most one that was already starting
  });

  it('SIGKILLs an old instance that ignores SIGTERM after maxShutdownDelaySeconds', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'ignore-sigterm', {
      serviceDetails: {
        runtime: 'node',
        maxShutdownDelaySeconds: 1,
        envSpecificDetails: { startCommand: 'node server.js' },
      },
    });
    const one = processesOf(service.id).length;
    expect(one).toBeGreaterThan(0);
    expect((await finished(t.api, owner, service.id, (await trigger(owner, service.id)).id)).status).toBe('live');
    const liveAt = Date.now();
    expect((await router(service.slug)).text).toBe('stubborn');
    await waitFor('the old instance to be killed', async () => processesOf(service.id).length === one, 6000, 50);
    const gone = Date.now() - liveAt;
    expect(gone).toBeGreaterThan(500); // it really ignored SIGTERM ...
    expect(gone).toBeLessThan(4000); // ... and was killed about a second later
  });

  it('answers 404 (never 500) to requests on a service whose deletion has begun, and leaves nothing of it', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'ignore-sigterm', {
      serviceDetails: {
        runtime: 'node',
        maxShutdownDelaySeconds: 4,
        envSpecificDetails: { startCommand: 'node server.js' },
      },
    });
    const archive = await packFixture('node-web');
    const deleting = t.api.delete(`/v1/services/${service.id}`, owner);
    await waitFor(
      'the deletion to be stopping the instance',
      async () => (await t.api.get(`/v1/services/${service.id}`, owner)).status === 404,
      2000,
      20,
    );
    const during = await Promise.all([
      t.api.post(`/v1/services/${service.id}/restart`, undefined, owner),
      t.api.post(`/v1/services/${service.id}/resume`, undefined, owner),
      t.api.post(`/v1/services/${service.id}/deploys`, {}, owner),
      upload(t.api, owner, service.id, archive),
      t.api.patch(`/v1/services/${service.id}`, { serviceDetails: { numInstances: 2 } }, owner),
    ]);
    expect(during.map((r) => r.status)).toEqual([404, 404, 404, 404, 404]);
    expect(processesOf(service.id).length).toBeGreaterThan(0); // still stopping: the requests came during the deletion
    expect((await deleting).status).toBe(204);
    expect(existsSync(path.join(t.server.dataDir, 'services', service.id))).toBe(false);
    expect(processesOf(service.id)).toEqual([]);
  });

  it('refuses an archive over the upload limit with 413, keeping nothing', async () => {
    const owner = await signUp(t.api);
    const { service } = (
      await t.api.post(
        '/v1/services',
        { type: 'web_service', name: 'too-big', serviceDetails: { runtime: 'node' } },
        owner,
      )
    ).body;
    const res = await upload(t.api, owner, service.id, gzipSync(randomBytes(300 * 1024)));
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
    const { rows } = await t.server.slipway.store.executeSql('select id from sources where service_id = $1', [
      service.id,
    ]);
    expect(rows).toEqual([]);
    expect(readdirSync(path.join(t.server.dataDir, 'services', service.id, 'sources', '.incoming'))).toEqual([]);
  });

  it('refuses a build that points publishPath outside the source with a symlink', async () => {
    const owner = await signUp(t.api);
    const { deploy } = await deployFixture(t.api, owner, 'static-site', {
      type: 'static_site',
      serviceDetails: { publishPath: 'site', buildCommand: 'ln -s / site' },
    });
    expect(deploy.status).toBe('build_failed');
    expect(deploy.failureReason).toMatch(/publishPath "site" leads outside the source/);
  });

  it('deleting a service mid-build cancels its queue and leaves no process, route or file', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web');
    await t.api.patch(
      `/v1/services/${service.id}`,
      { serviceDetails: { envSpecificDetails: { buildCommand: 'sleep 2' } } },
      owner,
    );
    const building = await trigger(owner, service.id);
    const queued = await trigger(owner, service.id);
    await waitFor(
      'the build to start',
      async () =>
        (await t.api.get(`/v1/services/${service.id}/deploys/${building.id}`, owner)).body.status ===
        'build_in_progress',
    );
    expect(queued.status).toBe('created');
    expect((await t.api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
    await new Promise((r) => setTimeout(r, 2500)); // longer than the build would have taken
    expect(processesOf(service.id)).toEqual([]);
    expect((await router(service.slug)).status).toBe(404);
    expect(existsSync(path.join(t.server.dataDir, 'services', service.id))).toBe(false);
  });

  it('rolls back only to a deploy that went live', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web');
    const broken = await upload(t.api, owner, service.id, await packFixture('crash-on-start'));
    expect((await finished(t.api, owner, service.id, broken.body.deployId)).status).toBe('update_failed');
    const res = await t.api.post(`/v1/services/${service.id}/rollback`, { deployId: broken.body.deployId }, owner);
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/update_failed/);
  });

  it('applies a new numInstances to the running deploy: extras stop, missing ones start', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web', {
      serviceDetails: { runtime: 'node', numInstances: 2 },
    });
    const instancesSeen = async (n: number) => {
      const ids = new Set<string>();
      for (let i = 0; i < n; i++) ids.add((await router(service.slug)).json().instance);
      return ids.size;
    };
    expect(await instancesSeen(6)).toBe(2);
    await t.api.patch(`/v1/services/${service.id}`, { serviceDetails: { numInstances: 1 } }, owner);
    await waitFor('one instance left', async () => (await instancesSeen(4)) === 1, 10_000, 200);
    await t.api.patch(`/v1/services/${service.id}`, { serviceDetails: { numInstances: 3 } }, owner);
    await waitFor('three instances serving', async () => (await instancesSeen(9)) === 3, 10_000, 200);
  });
});
