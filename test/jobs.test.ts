/**
 * Render's one-off jobs and cron runs by request (docs/deploys.md, "One-off jobs", "Cron runs"), against a real
 * Slipway with real processes: a job runs once in the live build with its env and secret files, ends with its exit
 * code, logs under its id, is canceled, is limited, survives a restart; a cron job runs now and is canceled.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { deployFixture, finished } from './helpers/apps.js';
import { addMember, client, signUp, type Caller, type Client } from './helpers/client.js';
import { renderSchemas } from './helpers/render-schemas.js';
import { bootServer, useServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

const t = useServer();
const render = renderSchemas();
const conformsJob = (job: unknown) => expect(render.component('jobWithCursor', { job, cursor: 'c' })).toEqual([]);

/** Host pids of a job's or run's processes, by the SLIPWAY_INSTANCE_ID in their environment. */
function processesOfInstance(instanceId: string): number[] {
  const needle = `SLIPWAY_INSTANCE_ID=${instanceId}\0`;
  return readdirSync('/proc').flatMap((entry) => {
    try {
      return /^\d+$/.test(entry) && readFileSync(`/proc/${entry}/environ`, 'latin1').includes(needle) ? [+entry] : [];
    } catch {
      return []; // gone, or not ours to read
    }
  });
}

function killIfThere(pid: number) {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

const worker = (api: Client, as: Caller, extra: Record<string, unknown> = {}) =>
  deployFixture(api, as, 'worker', {
    type: 'background_worker',
    serviceDetails: { runtime: 'node', envSpecificDetails: { startCommand: 'node worker.js' } },
    ...extra,
  });

const jobOf = (api: Client, as: Caller, serviceId: string, jobId: string) =>
  api.get(`/v1/services/${serviceId}/jobs/${jobId}`, as).then((r) => r.body);
const ended = (api: Client, as: Caller, serviceId: string, jobId: string, timeoutMs = 20_000) =>
  waitFor(
    `job ${jobId} to end`,
    async () => {
      const job = await jobOf(api, as, serviceId, jobId);
      return ['succeeded', 'failed', 'canceled'].includes(job.status) ? job : undefined;
    },
    timeoutMs,
    50,
  );
const running = (api: Client, as: Caller, serviceId: string, jobId: string) =>
  waitFor(`job ${jobId} to run`, async () => (await jobOf(api, as, serviceId, jobId)).status === 'running', 20_000, 50);
const eventsOf = async (api: Client, as: Caller, serviceId: string, type: string) =>
  (await api.get(`/v1/services/${serviceId}/events?type=${type}&limit=100`, as)).body.map((i: any) => i.event.details);

describe('one-off jobs', () => {
  it('runs a command once in the live build with its env and secret files, ends with its exit code, logs under its id', async () => {
    const owner = await signUp(t.api);
    const idle = await t.api.post(
      '/v1/services',
      { type: 'background_worker', name: 'no-deploy', autoDeploy: 'no', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const noLive = await t.api.post(`/v1/services/${idle.body.service.id}/jobs`, { startCommand: 'true' }, owner);
    expect(noLive.status, noLive.text).toBe(409);
    expect(noLive.body).toMatchObject({ code: 'conflict', message: expect.stringMatching(/no live deploy/) });

    const { service } = await worker(t.api, owner, { envVars: [{ key: 'GREETING', value: 'hello-job' }] });
    const base = `/v1/services/${service.id}/jobs`;
    expect(
      (await t.api.put(`/v1/services/${service.id}/secret-files/token.txt`, { content: 's3cret' }, owner)).status,
    ).toBe(201);
    const command = [
      'echo "greeting=$GREETING"',
      'echo "secret=$(cat /etc/secrets/token.txt)"',
      'echo written > /tmp/out.txt && echo "file=$(cat /tmp/out.txt)"',
      'test -f worker.js && echo in-build',
      'exit 3',
    ].join('; ');
    const created = await t.api.post(base, { startCommand: command }, owner);
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^job-[0-9a-v]{20}$/),
      serviceId: service.id,
      startCommand: command,
      planId: 'plan-srv-006', // the service's plan, starter
      status: expect.stringMatching(/^(pending|running)$/),
    });
    conformsJob(created.body);
    const failed = await ended(t.api, owner, service.id, created.body.id);
    expect(failed).toMatchObject({ status: 'failed', exitCode: 3, failureReason: 'it exited with status 3' });
    expect(Date.parse(failed.finishedAt)).toBeGreaterThanOrEqual(Date.parse(failed.startedAt));
    conformsJob(failed);
    expect(await eventsOf(t.api, owner, service.id, 'job_run_ended')).toEqual([
      { jobId: failed.id, status: 'failed', reason: { evicted: false, nonZeroExit: 3 }, deployId: expect.any(String) },
    ]);
    // Its output is in the service's logs, labelled instance = the job's id.
    const lines = await waitFor('the job output in the logs', async () => {
      const res = await t.api.get(`/v1/logs?resource=${service.id}&instance=${failed.id}&limit=100`, owner);
      const messages = (res.body.logs ?? []).map((l: any) => l.message as string);
      return messages.includes('in-build') ? messages : undefined;
    });
    expect(lines).toEqual(expect.arrayContaining(['greeting=hello-job', 'secret=s3cret', 'file=written', 'in-build']));

    const ok = await t.api.post(base, { startCommand: 'exit 0', planId: 'plan-srv-008' }, owner);
    expect(ok.body.planId).toBe('plan-srv-008');
    expect(await ended(t.api, owner, service.id, ok.body.id)).toMatchObject({ status: 'succeeded', exitCode: 0 });

    // Render's list: [{job, cursor}], newest first, filtered by status (comma-separated too), paged by cursor.
    const all = await t.api.get(base, owner);
    expect(all.body.map((i: any) => i.job.id)).toEqual([ok.body.id, failed.id]);
    expect(render.response('get', '/services/{serviceId}/jobs', 200, all.body)).toEqual([]);
    expect((await t.api.get(`${base}?status=failed`, owner)).body.map((i: any) => i.job.id)).toEqual([failed.id]);
    expect((await t.api.get(`${base}?status=succeeded,failed`, owner)).body).toHaveLength(2);
    expect((await t.api.get(`${base}?status=running`, owner)).body).toEqual([]);
    const first = await t.api.get(`${base}?limit=1`, owner);
    const next = await t.api.get(`${base}?limit=1&cursor=${first.body[0].cursor}`, owner);
    expect(next.body.map((i: any) => i.job.id)).toEqual([failed.id]);
    expect(
      (await t.api.get(`${base}?finishedAfter=${new Date(Date.now() + 60_000).toISOString()}`, owner)).body,
    ).toEqual([]);

    // Bad input is a 400; a static site has no process to run one in.
    for (const body of [
      { startCommand: '  ' },
      { startCommand: 'x'.repeat(10_001) },
      { startCommand: 'true', planId: 'plan-srv-999' },
    ]) {
      const res = await t.api.post(base, body, owner);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
    }
    const site = await t.api.post('/v1/services', { type: 'static_site', name: 'site', serviceDetails: {} }, owner);
    expect(
      (await t.api.post(`/v1/services/${site.body.service.id}/jobs`, { startCommand: 'true' }, owner)).status,
    ).toBe(400);

    // A viewer reads but does not run; another workspace sees nothing of them.
    const viewer = await addMember(t.api, owner, 'viewer');
    expect((await t.api.get(base, viewer)).body).toHaveLength(2);
    expect((await t.api.post(base, { startCommand: 'true' }, viewer)).status).toBe(403);
    const stranger = await signUp(t.api);
    expect((await t.api.get(`${base}/${failed.id}`, stranger)).status).toBe(404);
    expect((await t.api.get(base, stranger)).status).toBe(404);
    expect((await t.api.post(base, { startCommand: 'true' }, stranger)).status).toBe(404);
    expect((await t.api.post(`${base}/${failed.id}/cancel`, undefined, stranger)).status).toBe(404);
    // Another service's job id is no job of this one.
    expect((await t.api.get(`/v1/services/${site.body.service.id}/jobs/${failed.id}`, owner)).status).toBe(404);
  }, 120_000);

  it('cancels a running job at once, limits the jobs going at once, and answers 409 to a cancel of an ended job', async () => {
    const owner = await signUp(t.api);
    const { service } = await worker(t.api, owner);
    const base = `/v1/services/${service.id}/jobs`;
    const sleepers = [];
    for (let i = 0; i < 3; i++) sleepers.push((await t.api.post(base, { startCommand: 'sleep 60' }, owner)).body);
    const fourth = await t.api.post(base, { startCommand: 'sleep 60' }, owner);
    expect(fourth.status, fourth.text).toBe(429);
    expect(fourth.body.message).toMatch(/3 jobs going/);
    for (const job of sleepers) await running(t.api, owner, service.id, job.id);
    expect((await t.api.get(`${base}?status=running`, owner)).body).toHaveLength(3);
    expect(processesOfInstance(sleepers[0].id).length).toBeGreaterThan(0);
    // Jobs are no instances of the service: not listed as one, and a deploy does not replace them.
    const instances = async () => (await t.api.get(`/v1/services/${service.id}/instances`, owner)).body;
    expect(await instances()).toHaveLength(1);
    await finished(
      t.api,
      owner,
      service.id,
      (await t.api.post(`/v1/services/${service.id}/deploys`, {}, owner)).body.id,
    );
    expect((await t.api.get(`${base}?status=running`, owner)).body).toHaveLength(3);
    await waitFor('the old instance to drain', async () => (await instances()).length === 1); // the jobs stay

    const at = Date.now();
    const canceled = await t.api.post(`${base}/${sleepers[0].id}/cancel`, undefined, owner);
    expect(canceled.status, canceled.text).toBe(200);
    expect(Date.now() - at).toBeLessThan(5000);
    expect(canceled.body).toMatchObject({ status: 'canceled', finishedAt: expect.any(String) });
    conformsJob(canceled.body);
    expect(processesOfInstance(sleepers[0].id)).toEqual([]);
    expect((await t.api.post(`${base}/${sleepers[0].id}/cancel`, undefined, owner)).status).toBe(409);
    expect(await eventsOf(t.api, owner, service.id, 'job_run_ended')).toEqual([
      { jobId: sleepers[0].id, status: 'canceled', deployId: expect.any(String) },
    ]);
    // Canceled as soon as it is created (pending, or its sandbox still starting): it ends at once, and so does its process.
    const early = (await t.api.post(base, { startCommand: 'sleep 60' }, owner)).body;
    const earlyAt = Date.now();
    expect((await t.api.post(`${base}/${early.id}/cancel`, undefined, owner)).body.status).toBe('canceled');
    await waitFor('its process to go', async () => processesOfInstance(early.id).length === 0, 5000, 50);
    expect(Date.now() - earlyAt).toBeLessThan(5000);
    // And a little later, while its sandbox starts: the one SIGTERM must not miss the command (its grace is 30 s).
    for (const delayMs of [20, 60, 150, 300]) {
      const job = (await t.api.post(base, { startCommand: 'sleep 60' }, owner)).body;
      await new Promise((r) => setTimeout(r, delayMs));
      const at = Date.now();
      expect((await t.api.post(`${base}/${job.id}/cancel`, undefined, owner)).body.status).toBe('canceled');
      await waitFor('its process to go', async () => processesOfInstance(job.id).length === 0, 5000, 50);
      expect(Date.now() - at, `canceled ${delayMs} ms after its start`).toBeLessThan(5000);
    }
    // One ended: there is room for another.
    const again = await t.api.post(base, { startCommand: 'sleep 60' }, owner);
    expect(again.status, again.text).toBe(201);
    for (const job of [...sleepers.slice(1), again.body])
      expect((await t.api.post(`${base}/${job.id}/cancel`, undefined, owner)).body.status).toBe('canceled');
    expect((await t.api.get(`${base}?status=canceled`, owner)).body).toHaveLength(9);
  }, 120_000);
});

describe('cron runs by request', () => {
  it("runs a cron job now (a run going is canceled first, as Render's does), cancels the run going, and records each end", async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'worker', {
      type: 'cron_job',
      name: 'on-demand',
      envVars: [{ key: 'CRON_SLEEP', value: '60' }],
      // Once a year: every run in this test is by request.
      serviceDetails: {
        runtime: 'node',
        schedule: '0 0 1 1 *',
        envSpecificDetails: { startCommand: 'echo "cron-now $CRON_SLEEP"; sleep $CRON_SLEEP' },
      },
    });
    expect(deploy.status).toBe('live');
    const runs = `/v1/cron-jobs/${service.id}/runs`;
    expect((await t.api.delete(runs, owner)).status).toBe(409); // none going

    const first = await t.api.post(runs, undefined, owner);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ status: 'pending', startedAt: expect.any(String), triggeredBy: owner.email });
    expect(render.component('cronJobRun', first.body)).toEqual([]);
    await waitFor('the run to print', async () => {
      const res = await t.api.get(`/v1/logs?resource=${service.id}&instance=${first.body.id}`, owner);
      return (res.body.logs ?? []).some((l: any) => l.message === 'cron-now 60');
    });
    expect(processesOfInstance(first.body.id).length).toBeGreaterThan(0);

    const second = await t.api.post(runs, undefined, owner);
    expect(second.status).toBe(200);
    expect(second.body.id).not.toBe(first.body.id);
    expect(processesOfInstance(first.body.id)).toEqual([]);
    const user = { id: owner.id, email: owner.email };
    expect(await eventsOf(t.api, owner, service.id, 'cron_job_run_ended')).toEqual([
      { cronJobRunId: first.body.id, status: 'canceled', user, deployId: deploy.id },
    ]);
    const at = Date.now();
    expect((await t.api.delete(runs, owner)).status).toBe(204);
    expect(Date.now() - at).toBeLessThan(5000);
    expect(processesOfInstance(second.body.id)).toEqual([]);
    expect((await t.api.delete(runs, owner)).status).toBe(409);
    const started = await eventsOf(t.api, owner, service.id, 'cron_job_run_started');
    expect(started.map((d: any) => d.cronJobRunId)).toEqual([second.body.id, first.body.id]);

    // A run that ends by itself is successful (the env is read at each run's start).
    expect((await t.api.put(`/v1/services/${service.id}/env-vars/CRON_SLEEP`, { value: '0' }, owner)).status).toBe(200);
    const third = (await t.api.post(runs, undefined, owner)).body;
    const end = await waitFor('the run to end', async () =>
      (await eventsOf(t.api, owner, service.id, 'cron_job_run_ended')).find((d: any) => d.cronJobRunId === third.id),
    );
    expect(end).toEqual({ cronJobRunId: third.id, status: 'successful', user, deployId: deploy.id });

    // Only a cron job has runs; a viewer cannot run one; another workspace's is a 404.
    const other = await t.api.post(
      '/v1/services',
      { type: 'background_worker', name: 'not-cron', autoDeploy: 'no', serviceDetails: { runtime: 'node' } },
      owner,
    );
    expect((await t.api.post(`/v1/cron-jobs/${other.body.service.id}/runs`, undefined, owner)).status).toBe(404);
    const viewer = await addMember(t.api, owner, 'viewer');
    expect((await t.api.post(runs, undefined, viewer)).status).toBe(403);
    expect((await t.api.delete(runs, viewer)).status).toBe(403);
    const stranger = await signUp(t.api);
    expect((await t.api.post(runs, undefined, stranger)).status).toBe(404);
    expect((await t.api.delete(runs, stranger)).status).toBe(404);
  }, 120_000);
});

describe('one-off jobs across a restart of Slipway', () => {
  it('re-adopts a job still running, ends one that finished while Slipway was down by its exit code, fails one killed', async () => {
    const first = await bootServer();
    let second: Awaited<ReturnType<typeof bootServer>> | undefined;
    try {
      const api = client(first.url);
      const owner = await signUp(api);
      const { service } = await worker(api, owner);
      const base = `/v1/services/${service.id}/jobs`;
      const start = async (startCommand: string) => (await api.post(base, { startCommand }, owner)).body.id as string;
      const [finishes, killed, survives] = [
        await start('sleep 2; exit 5'),
        await start('sleep 60'),
        await start('sleep 60'),
      ];
      for (const id of [finishes, killed, survives]) await running(api, owner, service.id, id);
      await first.stop();
      // One killed process can take another of the list with it before its own kill (ESRCH): gone either way.
      for (const pid of processesOfInstance(killed)) killIfThere(pid);
      await waitFor('the first job to exit', async () => processesOfInstance(finishes).length === 0, 10_000);

      second = await bootServer({}, { dataDir: first.dataDir, databaseUrl: first.databaseUrl });
      const again = client(second.url);
      expect(await ended(again, owner, service.id, finishes)).toMatchObject({ status: 'failed', exitCode: 5 });
      expect(await ended(again, owner, service.id, killed)).toMatchObject({
        status: 'failed',
        failureReason: expect.stringMatching(/while Slipway was stopped/),
      });
      expect((await jobOf(again, owner, service.id, survives)).status).toBe('running');
      expect(processesOfInstance(survives).length).toBeGreaterThan(0);
      const canceled = await again.post(`${base}/${survives}/cancel`, undefined, owner);
      expect(canceled.body.status).toBe('canceled');
      expect(processesOfInstance(survives)).toEqual([]);
    } finally {
      await second?.stop();
      await first.close(); // kills what is left under the data dir, then removes it
    }
  }, 120_000);
});
