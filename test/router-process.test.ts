/**
 * The Node router runs as a process of its own (src/router/daemon/): kill -9 of the API process under load fails no
 * request, web services and static sites (with their rules) stay reachable until the API is back, what was served
 * meanwhile reaches the request log, and the restarted API adopts the same router process. A router process that dies
 * is started again, on the same port, serving its last table.
 */
import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { daemonFiles, runningDaemon } from '../src/router/daemon/files.js';
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
import { bootServer } from './helpers/server.js';
import {
  freePort,
  freshStore,
  sleep,
  spawnSlipway,
  waitFor,
  waitForHealthy,
  type SlipwayProcess,
} from './helpers/process.js';

describe('the Node router outlives the API process', () => {
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
    await store?.remove(); // the router process too: its command line names the data dir
  });

  it('serves every request while the API is killed and restarted, and the new API adopts it', async () => {
    store = await freshStore();
    const [port, routerPort] = [await freePort(), await freePort()];
    // The Node router in front alone (nginx's own restart test is router-nginx-restart.test.ts).
    const env = {
      ...store.env,
      SLIPWAY_ROUTER: 'node',
      SLIPWAY_PORT: String(port),
      SLIPWAY_ROUTER_PORT: String(routerPort),
      // Requests as they are served are logged one a second here; what was served while the API was down, in full.
      SLIPWAY_REQUEST_LOG_RATE_LINES: '1',
      SLIPWAY_REQUEST_LOG_BURST_LINES: '1',
    };
    const url = `http://127.0.0.1:${port}`;
    proc = spawnSlipway(env);
    await waitForHealthy(url, 60_000);
    const api = client(url);
    expect((await api.get('/status')).body.router).toMatchObject({ kind: 'node', process: { adopted: false } });
    const owner = await signUp(api);
    const { service } = await deployFixture(api, owner, 'node-web', {}, { VERSION: 'v1' });
    pids.push(...processesOf(service.id));
    const site = (
      await deployFixture(
        api,
        owner,
        'static-site',
        { type: 'static_site', serviceDetails: { publishPath: 'public' } },
        { 'public/index.html': '<p>home</p>' },
      )
    ).service;
    const rule = { path: '/*', name: 'X-Frame-Options', value: 'DENY' };
    expect((await api.post(`/v1/services/${site.id}/headers`, rule, owner)).status).toBe(201);
    const files = daemonFiles(store.dataDir);
    const router = runningDaemon(files);
    expect(router).toBeGreaterThan(0);

    // A new connection per request: what is measured is the router being there, not a kept-alive socket.
    const agent = new http.Agent({ keepAlive: false });
    const get = (slug: string, path: string) =>
      viaRouter(routerPort, slug, path, { agent, timeoutMs: 5000 }).catch((err: Error) => ({
        status: 0,
        text: err.message,
        headers: {} as http.IncomingHttpHeaders,
      }));
    const load = keepRequesting([() => get(service.slug, '/'), () => get(site.slug, '/')]);

    await sleep(300);
    proc.child.kill('SIGKILL');
    await proc.exited;
    const servedBefore = load.served();
    await sleep(2000); // the API is down
    expect(load.served()).toBeGreaterThan(servedBefore);
    const whileDown = `/while-down-${Date.now()}`;
    expect((await get(service.slug, whileDown)).status).toBe(200);
    const page = await get(site.slug, '/');
    expect(page.text).toContain('home');
    expect(page.headers['x-frame-options']).toBe('DENY'); // the site's rules travel with the table

    proc = spawnSlipway(env);
    await waitForHealthy(url, 60_000);
    await sleep(500);
    await load.stop();
    expect(load.failures).toEqual([]);

    await requestLogged(api, owner, service.id, whileDown);

    // Adopted, not started again; and it follows the new API's changes.
    expect(runningDaemon(files)).toBe(router);
    expect((await api.get('/status')).body.router).toMatchObject({ process: { pid: router, adopted: true } });
    const up = await upload(api, owner, service.id, await packFixture('node-web', { VERSION: 'v2' }));
    expect((await finished(api, owner, service.id, up.body.deployId)).status).toBe('live');
    pids.push(...processesOf(service.id));
    expect((await viaRouter(routerPort, service.slug, '/', { agent })).json().version).toBe('v2');

    // A router process that dies is started again by the API, on the same port, with the current table.
    process.kill(router!, 'SIGKILL');
    await waitFor(
      'a new router process serving v2',
      async () => {
        const r = await get(service.slug, '/');
        return (r.status === 200 && JSON.parse(r.text).version === 'v2') || undefined;
      },
      15_000,
    );
    expect(runningDaemon(files)).not.toBe(router);
    // The new process serves a moment before the API has heard back from it.
    await waitFor(
      '/status naming the new router process',
      async () => {
        const now = (await api.get('/status')).body.router.process as { pid: number; adopted: boolean };
        return (now.pid === runningDaemon(files) && !now.adopted) || undefined;
      },
      5_000,
    );
  }, 180_000);
});

describe('a graceful stop of the API', () => {
  it('logs every request the router served around it, once the API is back', async () => {
    const first = await bootServer();
    let again: Awaited<ReturnType<typeof bootServer>> | undefined;
    try {
      const api = client(first.url);
      const owner = await signUp(api);
      const { service } = await deployFixture(api, owner, 'node-web');
      // Requests go on while the API stops: its last read of the access log, as it stops, always finds some.
      const answered: string[] = [];
      let going = true;
      const requests = (async () => {
        for (let i = 0; going; i++) {
          const p = `/around-stop-${i}`;
          if ((await viaRouter(first.slipway.routerPort, service.slug, p)).status === 200) answered.push(p);
          await sleep(5);
        }
      })();
      await sleep(300);
      await first.stop();
      going = false;
      await requests;
      again = await bootServer({}, { dataDir: first.dataDir, databaseUrl: first.databaseUrl });
      for (const p of answered) await requestLogged(client(again.url), owner, service.id, p);
    } finally {
      if (again) await again.close();
      else await first.close();
    }
  }, 120_000);
});

describe('adopting the router process', () => {
  it('adopts one started with the same settings, keeping its ports, and replaces one started with others', async () => {
    const first = await bootServer();
    const servers = [first];
    try {
      const client0 = client(first.url);
      const before = (await client0.get('/status')).body.router.process as {
        pid: number;
        adopted: boolean;
        workers: number;
      };
      expect(before.adopted).toBe(false);
      const routerPort = first.slipway.routerPort;
      await first.stop();
      expect(runningDaemon(daemonFiles(first.dataDir))).toBe(before.pid); // outlives the API

      // The same settings (SLIPWAY_ROUTER_PORT=0 takes the port it has): adopted, nothing restarted.
      const reuse = { dataDir: first.dataDir, databaseUrl: first.databaseUrl };
      const same = await bootServer({}, reuse);
      servers.push(same);
      expect((await client(same.url).get('/status')).body.router.process).toEqual({
        pid: before.pid,
        adopted: true,
        workers: before.workers,
      });
      expect(same.slipway.routerPort).toBe(routerPort);
      await same.stop();

      // Another upstream timeout: that process cannot serve these settings, so it is replaced.
      const other = await bootServer({ SLIPWAY_UPSTREAM_TIMEOUT_SECONDS: '7' }, reuse);
      servers.push(other);
      const after = (await client(other.url).get('/status')).body.router.process as { pid: number; adopted: boolean };
      expect(after.adopted).toBe(false);
      expect(after.pid).not.toBe(before.pid);
      expect(runningDaemon(daemonFiles(first.dataDir))).toBe(after.pid);
      expect(other.slipway.routerPort).toBe(routerPort);
    } finally {
      for (const s of servers.slice(0, -1)) await s.stop();
      await servers.at(-1)!.close();
    }
  }, 60_000);
});
