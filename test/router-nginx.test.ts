/**
 * SLIPWAY_ROUTER=nginx: nginx (Debian's nginx-light) serves the apps, fed from the route table, with the Node router
 * behind it for everything else. Real nginx, real deploys, real requests through the router port.
 */
import { existsSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nginxFiles, installConfig, nginxBinary, runningMaster } from '../src/router/nginx/process.js';
import { isLive, readStat } from '../src/runtime/local/proc.js';
import { deployFixture, finished, packFixture, processesOf, upload, viaRouter } from './helpers/apps.js';
import { client, signUp, type TestUser } from './helpers/client.js';
import { bootServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

const binary = nginxBinary();
interface LogEntry {
  message: string;
  labels: Array<{ name: string; value: string }>;
}

describe.skipIf(!binary)('nginx as the data plane', () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let user: TestUser;
  let as: { cookie: string };
  beforeAll(async () => {
    server = await bootServer({ SLIPWAY_ROUTER: 'nginx', SLIPWAY_UPSTREAM_TIMEOUT_SECONDS: '2' });
    api = client(server.url);
    user = await signUp(api);
    as = { cookie: user.cookie };
  }, 60_000);
  afterAll(() => server?.close());

  it('serves a web service through nginx, says so in /status, and records each request', async () => {
    const status = await api.get('/status');
    // Behind nginx the Node router serves static sites and pages only: one worker.
    expect(status.body.router).toEqual({
      kind: 'nginx',
      process: { pid: expect.any(Number), adopted: false, workers: 1 },
    });
    const master = runningMaster(nginxFiles(server.dataDir));
    expect(master).toBeGreaterThan(0);

    const { service, deploy } = await deployFixture(api, as, 'node-web');
    expect(deploy.status).toBe('live');
    const reply = await viaRouter(server.slipway.routerPort, service.slug, '/hello?x=1');
    expect(reply.status).toBe(200);
    expect(reply.headers.server).toMatch(/^nginx/); // nginx answered, not the Node router
    const body = reply.json();
    expect(body.version).toBe('v0');
    expect(body.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(body.headers['x-forwarded-proto']).toBe('http');
    expect(body.headers['x-forwarded-port']).toBe(String(server.slipway.routerPort));
    expect(body.headers.host).toBe(`${service.slug}.localhost:${server.slipway.routerPort}`);

    // Its workers are not the apps' user: an app could otherwise signal them (nginx's default is nobody).
    if (process.getuid?.() === 0) {
      const uidOf = (pid: number) =>
        Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? -1);
      const workers = readFileSync(`/proc/${master}/task/${master}/children`, 'utf8').trim().split(/\s+/).map(Number);
      const apps = processesOf(service.id).map(uidOf);
      expect(workers.length).toBeGreaterThan(0);
      expect(apps.length).toBeGreaterThan(0);
      for (const worker of workers) expect(apps).not.toContain(uidOf(worker));
    }

    // The access log is tailed into the service's request log, with the instance that answered.
    const since = new Date(Date.now() - 60_000).toISOString();
    const logged = await waitFor(
      'the request in the request log',
      async () => {
        const res = await api.get(
          `/v1/logs?ownerId=${user.workspaceId}&startTime=${since}&resource=${service.id}&type=request&path=/hello*`,
          as,
        );
        return (res.body.logs as LogEntry[] | undefined)?.[0];
      },
      10_000,
    );
    expect(logged.message).toMatch(/^GET \/hello\?x=1 200 [\d.]+ms \d+B$/);
    const instances = (await api.get(`/v1/services/${service.id}/instances`, as)).body as Array<{ id: string }>;
    expect(instances.map((i) => i.id)).toContain(logged.labels.find((l) => l.name === 'instance')?.value);
  });

  it('hands what is not a live web service to the Node router: unknown hosts get its 404 page', async () => {
    const reply = await viaRouter(server.slipway.routerPort, 'no-such-service');
    expect(reply.status).toBe(404);
    expect(reply.text).toContain('no-such-service.localhost');
  });

  it('answers 504 when the app sends nothing within the upstream timeout', async () => {
    const { service } = await deployFixture(api, as, 'node-web');
    const reply = await viaRouter(server.slipway.routerPort, service.slug, '/?delay=5000');
    expect(reply.status).toBe(504);
  });

  it('rolls over to a new deploy without reloading nginx: no failed request, no closed connection', async () => {
    const { service } = await deployFixture(api, as, 'node-web');
    // An earlier test's reload may still have an old worker finishing: from one worker on, the same workers serve.
    const master = runningMaster(nginxFiles(server.dataDir))!;
    const workersNow = () => readFileSync(`/proc/${master}/task/${master}/children`, 'utf8').trim();
    const workers = await waitFor('one worker', async () => (/^\d+$/.test(workersNow()) ? workersNow() : undefined));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const results: Array<number | string> = [];
    const versions = new Set<string>();
    let retried = 0;
    let stop = false;
    const load = (async () => {
      while (!stop) {
        const r = await browserGet(server.slipway.routerPort, service.slug, agent, () => retried++).catch(
          (err: NodeJS.ErrnoException) => err.code ?? err.message,
        );
        results.push(typeof r === 'string' ? r : r.status);
        if (typeof r !== 'string' && r.status === 200)
          versions.add((JSON.parse(r.text) as { version: string }).version);
      }
    })();
    for (const version of ['v1', 'v2']) {
      const up = await upload(api, as, service.id, await packFixture('node-web', { VERSION: version }));
      expect((await finished(api, as, service.id, up.body.deployId)).status).toBe('live');
    }
    await waitFor('v2 to answer', async () => versions.has('v2') || undefined, 10_000);
    stop = true;
    await load;
    agent.destroy();
    expect(results.length).toBeGreaterThan(20);
    expect(results.filter((s) => s !== 200)).toEqual([]);
    expect(versions).toEqual(new Set(['v0', 'v1', 'v2']));
    // The addresses went to the Lua balancer over the control socket: no reload, so no kept-alive connection closed.
    expect(workersNow()).toBe(workers);
    expect(retried).toBe(0);
  }, 120_000);

  it("routes a new service's name without reloading nginx: another service's kept-alive connection stays open", async () => {
    const { service: first } = await deployFixture(api, as, 'node-web');
    const master = runningMaster(nginxFiles(server.dataDir))!;
    const workersNow = () => readFileSync(`/proc/${master}/task/${master}/children`, 'utf8').trim();
    const workers = await waitFor('one worker', async () => (/^\d+$/.test(workersNow()) ? workersNow() : undefined));
    const configText = () => readFileSync(nginxFiles(server.dataDir).conf, 'utf8');
    const config = configText();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let retried = 0;
    const sockets = new Set<string>();
    agent.on('free', (socket: net.Socket) => sockets.add(`${socket.localPort}`));
    expect((await browserGet(server.slipway.routerPort, first.slug, agent, () => retried++)).status).toBe(200);

    const { service: second, deploy } = await deployFixture(api, as, 'node-web');
    expect(deploy.status).toBe('live');
    const reply = await viaRouter(server.slipway.routerPort, second.slug);
    expect(reply.status).toBe(200);
    expect((reply.json() as { instance: string }).instance).toMatch(new RegExp(`^${second.id}-`));
    expect((await browserGet(server.slipway.routerPort, first.slug, agent, () => retried++)).status).toBe(200);
    agent.destroy();
    // One connection throughout, never closed by nginx: no reload, the same workers, the same configuration file.
    expect([retried, sockets.size]).toEqual([0, 1]);
    expect(workersNow()).toBe(workers);
    expect(configText()).toBe(config);
  }, 120_000);

  it('starts nginx again after kill -9 of its master, whose workers and control socket it left behind', async () => {
    const { service } = await deployFixture(api, as, 'node-web');
    const files = nginxFiles(server.dataDir);
    const master = runningMaster(files)!;
    const workers = readFileSync(`/proc/${master}/task/${master}/children`, 'utf8').trim().split(/\s+/).map(Number);
    process.kill(master, 'SIGKILL'); // `kill -9 $(cat nginx.pid)`, or the OOM killer
    // nginx's workers do not watch their master: they go on, holding the ports with the old configuration.
    expect(workers.every(alive)).toBe(true);
    expect(existsSync(files.controlSocket)).toBe(true);
    await waitFor('a new nginx master', async () => (runningMaster(files) ?? master) !== master, 15_000);
    expect(workers.filter(alive)).toEqual([]);
    const reply = await waitFor(
      'the service served again',
      async () => {
        const r = await viaRouter(server.slipway.routerPort, service.slug).catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      },
      10_000,
    );
    expect(reply.headers.server).toMatch(/^nginx/);
  }, 60_000);

  // Issue 29: `GET http://b…/` with `Host: a…` went to B with `Host: a…`; a client's X-Real-IP and Forwarded reached
  // apps unchanged.
  describe('what the app is told about the request', () => {
    let a: { id: string; slug: string };
    let b: { id: string; slug: string };
    beforeAll(async () => {
      a = (await deployFixture(api, as, 'node-web')).service;
      b = (await deployFixture(api, as, 'node-web')).service;
    }, 120_000);

    it('refuses an absolute-form target whose Host names another host (400); one that agrees reaches its app', async () => {
      const port = server.slipway.routerPort;
      const [hostA, hostB] = [`${a.slug}.localhost:${port}`, `${b.slug}.localhost:${port}`];
      for (const target of [`http://${hostB}/x`, `http://${b.slug}.localhost/x`, 'http://no-such.localhost/x']) {
        const refused = await rawRequest(port, [`GET ${target} HTTP/1.1`, `Host: ${hostA}`]);
        expect(refused.status, target).toBe(400);
        expect(refused.head, target).toMatch(/^server: nginx/im);
      }
      const agreeing = await rawRequest(port, [`GET http://${hostB.toUpperCase()}/x?y=1 HTTP/1.1`, `Host: ${hostB}`]);
      expect(agreeing.status).toBe(200);
      const body = JSON.parse(agreeing.body);
      expect(body.env.SLIPWAY_SERVICE_ID).toBe(b.id);
      expect(body.headers).toMatchObject({ host: hostB, 'x-forwarded-host': hostB });
    });

    it('sets X-Real-IP to the client address and adds its own element to Forwarded, as to X-Forwarded-For', async () => {
      const port = server.slipway.routerPort;
      const host = `${a.slug}.localhost:${port}`;
      const spoofed = await rawRequest(port, [
        'GET / HTTP/1.1',
        `Host: ${host}`,
        'X-Real-IP: 6.6.6.6',
        'Forwarded: for=6.6.6.6;proto=https',
        'X-Forwarded-For: 6.6.6.6',
      ]);
      expect(JSON.parse(spoofed.body).headers).toMatchObject({
        'x-real-ip': '127.0.0.1',
        forwarded: `for=6.6.6.6;proto=https, for=127.0.0.1;host="${host}";proto=http`,
        'x-forwarded-for': '6.6.6.6, 127.0.0.1',
      });
      const plain = await rawRequest(port, ['GET / HTTP/1.1', `Host: ${host}`]);
      expect(JSON.parse(plain.body).headers).toMatchObject({
        'x-real-ip': '127.0.0.1',
        forwarded: `for=127.0.0.1;host="${host}";proto=http`,
      });
    });
  });

  it('keeps the running configuration when nginx -t refuses a new one', async () => {
    const files = nginxFiles(server.dataDir);
    const before = readFileSync(files.conf, 'utf8');
    const refused = await installConfig(binary!, files, 'events {}\nhttp { server { listen nowhere:port; } }\n');
    expect(refused).toMatch(/invalid|host not found|nowhere/i);
    expect(readFileSync(files.conf, 'utf8')).toBe(before);
    // And the running nginx still serves with it.
    const reply = await viaRouter(server.slipway.routerPort, 'no-such-service');
    expect([reply.status, reply.headers.server]).toEqual([404, 'nginx']);
  });
});

/**
 * A GET as browsers, curl and Go's client send it: a request that fails on a reused kept-alive connection before any
 * answer (the server closed it while idle: RFC 9112 §9.3.1) is sent once more on a new one.
 */
function browserGet(
  port: number,
  slug: string,
  agent: http.Agent,
  onRetry: () => void,
  retry = true,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers: { host: `${slug}.localhost:${port}` } });
    req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (retry && req.reusedSocket && (err.code === 'ECONNRESET' || err.message === 'socket hang up')) {
        onRetry();
        return resolve(browserGet(port, slug, agent, onRetry, false));
      }
      reject(err);
    });
  });
}

/** Sends `lines` as one raw request (Connection: close): its status, head and (de-chunked) body. */
async function rawRequest(port: number, lines: string[]): Promise<{ status: number; head: string; body: string }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.write(`${[...lines, 'Connection: close'].join('\r\n')}\r\n\r\n`);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  await once(socket, 'close');
  const text = Buffer.concat(chunks).toString();
  const [head = '', ...rest] = text.split('\r\n\r\n');
  let body = rest.join('\r\n\r\n');
  if (/^transfer-encoding: chunked/im.test(head)) {
    let decoded = '';
    for (let at = 0; ;) {
      const eol = body.indexOf('\r\n', at);
      const size = parseInt(body.slice(at, eol), 16);
      if (!size) break;
      decoded += body.slice(eol + 2, eol + 2 + size);
      at = eol + 2 + size + 2;
    }
    body = decoded;
  }
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0), head, body };
}

/** Whether `pid` runs (not a zombie awaiting its parent). */
const alive = (pid: number) => {
  const stat = readStat(pid);
  return !!stat && isLive(stat);
};
