/**
 * With SLIPWAY_ROUTER=nginx the router outlives the control plane: kill -9 of the API process under load fails no
 * request, and the restarted Slipway adopts the running nginx through its pid file instead of starting a second one.
 */
import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { nginxBinary, nginxFiles, runningMaster } from '../src/router/nginx/process.js';
import {
  deployFixture,
  finished,
  keepRequesting,
  requestLogged,
  packFixture,
  processesOf,
  upload,
  viaRouter,
} from './helpers/apps.js';
import { client, signUp } from './helpers/client.js';
import {
  freePort,
  freshStore,
  sleep,
  spawnSlipway,
  waitFor,
  waitForHealthy,
  type SlipwayProcess,
} from './helpers/process.js';

describe.skipIf(!nginxBinary())('nginx outlives the API process', () => {
  let proc: SlipwayProcess | undefined;
  let store: Awaited<ReturnType<typeof freshStore>> | undefined;
  const pids: number[] = [];
  afterAll(async () => {
    await proc?.kill();
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await store?.remove(); // stops the data dir's nginx too
  });

  it('serves every request while the API is killed and restarted, and the new API adopts the same nginx', async () => {
    store = await freshStore();
    const [port, routerPort] = [await freePort(), await freePort()];
    const env = {
      ...store.env,
      SLIPWAY_PORT: String(port),
      SLIPWAY_ROUTER_PORT: String(routerPort),
      SLIPWAY_ROUTER: 'nginx',
    };
    const url = `http://127.0.0.1:${port}`;
    proc = spawnSlipway(env);
    await waitForHealthy(url, 60_000);
    const api = client(url);
    const owner = await signUp(api);
    const { service } = await deployFixture(api, owner, 'node-web', {}, { VERSION: 'v1' });
    pids.push(...processesOf(service.id));
    const master = runningMaster(nginxFiles(store.dataDir));
    expect(master).toBeGreaterThan(0);

    // A new connection per request: what is measured is the router being there, not a kept-alive socket.
    const agent = new http.Agent({ keepAlive: false });
    const load = keepRequesting([() => viaRouter(routerPort, service.slug, '/', { agent, timeoutMs: 5000 })]);

    await sleep(300);
    proc.child.kill('SIGKILL');
    await proc.exited;
    const servedBefore = load.served();
    await sleep(2000); // the API is down
    expect(load.served()).toBeGreaterThan(servedBefore);
    const whileDown = `/while-down-${Date.now()}`;
    expect((await viaRouter(routerPort, service.slug, whileDown, { agent })).status).toBe(200);
    proc = spawnSlipway(env);
    await waitForHealthy(url, 60_000);
    await sleep(500);
    await load.stop();
    expect(load.failures).toEqual([]);

    // What nginx served while the API was down reaches the request log (and the meters) after the restart.
    await requestLogged(api, owner, service.id, whileDown);

    // Adopted, not started again; and it follows the new API's changes.
    expect(runningMaster(nginxFiles(store.dataDir))).toBe(master);
    expect((await api.get('/status')).body.router.kind).toBe('nginx');
    const up = await upload(api, owner, service.id, await packFixture('node-web', { VERSION: 'v2' }));
    expect((await finished(api, owner, service.id, up.body.deployId)).status).toBe('live');
    pids.push(...processesOf(service.id));
    await waitFor(
      'v2 through the adopted nginx',
      async () => (await viaRouter(routerPort, service.slug, '/', { agent })).json().version === 'v2' || undefined,
      10_000,
    );
  }, 180_000);
});
