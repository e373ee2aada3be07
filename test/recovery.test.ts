import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { deployFixture, finished, packFixture, processesOf, upload, viaRouter } from './helpers/apps.js';
import { client, signUp, type TestUser } from './helpers/client.js';
import { freePort, freshStore, spawnSlipway, waitFor, waitForHealthy, type SlipwayProcess } from './helpers/process.js';
import { useServer } from './helpers/server.js';
import { mountsUnder } from '../src/runtime/local/build-disks.js';

const t = useServer();

describe('crashes', () => {
  it('restarts an instance that exits, and marks a service that keeps crashing stuck_crashlooping', async () => {
    const owner = await signUp(t.api);
    const { service } = await deployFixture(t.api, owner, 'node-web');
    const router = (path = '/') => viaRouter(t.server.slipway.routerPort, service.slug, path);
    const killApp = () => processesOf(service.id).forEach((pid) => process.kill(pid, 'SIGKILL'));
    const first = (await router()).json().boot;
    killApp();
    const second = await waitFor(
      'a restarted instance',
      async () => {
        const r = await router().catch(() => undefined);
        return r?.status === 200 && r.json().boot !== first ? r.json().boot : undefined;
      },
      15_000,
    );
    expect(second).not.toBe(first);
    const events = await t.server.slipway.store.executeSql(
      `select type from events where service_id = $1 and type = 'server_failed'`,
      [service.id],
    );
    expect(events.rows.length).toBeGreaterThanOrEqual(1);

    // Keep killing it: after five crashes in the window the service is flagged.
    let boot = second;
    for (let i = 0; i < 5; i++) {
      killApp();
      boot = await waitFor(
        'the next restart',
        async () => {
          const r = await router().catch(() => undefined);
          return r?.status === 200 && r.json().boot !== boot ? r.json().boot : undefined;
        },
        40_000,
        200,
      );
    }
    const svc = (await t.api.get(`/v1/services/${service.id}`, owner)).body;
    expect(svc.suspenders).toContain('stuck_crashlooping');
    // Render's event for it: a suspender added by stuck_crashlooping (Slipway's service_crashlooping, read as Render's).
    const added = await t.api.get(`/v1/services/${service.id}/events?type=suspender_added`, owner);
    expect(added.body.map((i: any) => i.event)).toEqual([
      expect.objectContaining({
        type: 'suspender_added',
        details: expect.objectContaining({ actor: 'stuck_crashlooping', slipwayType: 'service_crashlooping' }),
      }),
    ]);
  }, 120_000);
});

describe('kill -9 of Slipway', () => {
  let proc: SlipwayProcess | undefined;
  let store: Awaited<ReturnType<typeof freshStore>>;
  afterAll(async () => {
    await proc?.kill();
    // Apps are meant to outlive Slipway: stop the ones this test started.
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await store?.remove();
  });
  const pids: number[] = [];

  it('keeps apps serving, re-adopts them on restart, and fails the interrupted deploy with a reason', async () => {
    store = await freshStore();
    const [port, routerPort] = [await freePort(), await freePort()];
    const env = {
      ...store.env,
      SLIPWAY_PORT: String(port),
      SLIPWAY_ROUTER_PORT: String(routerPort),
      SLIPWAY_BUILD_TIMEOUT_SECONDS: '60',
    };
    proc = spawnSlipway(env);
    const url = `http://127.0.0.1:${port}`;
    await waitForHealthy(url);
    const api = client(url);
    const owner: TestUser = await signUp(api);
    const { service, deploy } = await deployFixture(api, owner, 'node-web', {}, { VERSION: 'v1' });
    expect(deploy.status).toBe('live');
    const before = (await viaRouter(routerPort, service.slug)).json();
    pids.push(...processesOf(service.id));
    expect(pids.length).toBeGreaterThan(0);

    // A deploy whose build hangs, in flight when Slipway dies.
    await api.patch(
      `/v1/services/${service.id}`,
      { serviceDetails: { envSpecificDetails: { buildCommand: 'sleep 30' } } },
      owner,
    );
    const hanging = await upload(api, owner, service.id, await packFixture('node-web', { VERSION: 'v2' }));
    await waitFor(
      'the build to start',
      async () =>
        (await api.get(`/v1/services/${service.id}/deploys/${hanging.body.deployId}`, owner)).body.status ===
        'build_in_progress',
    );
    const mountsDisks = (await api.get('/status')).body.isolation.limits.buildDisk as boolean;
    proc.child.kill('SIGKILL');
    await proc.exited;

    // The app outlives the control plane; the interrupted build dies with it.
    // Well under the build's 30 s sleep; what is left over is named if it does not go.
    await waitFor(
      'only the app processes left',
      async () => {
        const extra = processesOf(service.id).filter((pid) => !pids.includes(pid));
        if (extra.length) throw new Error(`still running: ${extra.map(commandLineOf).join('; ')}`);
        return pids.every((pid) => processesOf(service.id).includes(pid)) || undefined;
      },
      10_000,
    );
    // The build's disk stayed mounted when Slipway died (where this machine mounts build disks); the new process
    // unmounts it before anything else.
    const buildDisk = `${store.dataDir}/services/${service.id}/build`;
    if (mountsDisks) expect(mountsUnder(buildDisk)).toEqual([buildDisk]);
    proc = spawnSlipway(env);
    await waitForHealthy(url);
    expect(mountsUnder(buildDisk)).toEqual([]);
    const after = await viaRouter(routerPort, service.slug);
    expect(after.status).toBe(200);
    expect(after.json()).toMatchObject({ boot: before.boot, version: 'v1' }); // re-adopted, not restarted
    const interrupted = await finished(api, owner, service.id, hanging.body.deployId);
    expect(interrupted.status).toBe('build_failed');
    expect(interrupted.failureReason).toMatch(/interrupted/);
    expect((await api.get(`/v1/services/${service.id}`, owner)).body.suspenders).toEqual([]);

    expect((await api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
    await waitFor('no orphan process', async () => processesOf(service.id).length === 0);
  }, 120_000);
});

const commandLineOf = (pid: number) => {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()}`;
  } catch {
    return `${pid} (gone)`;
  }
};
