/**
 * Log streams (Render's): the settings API, and an app's lines forwarded as RFC 5424 over TLS to a syslog receiver in
 * the test, across a Slipway restart and an endpoint that goes down and comes back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net, { type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSyslogConnector } from '../src/integrations/syslog-sender.js';
import { createLogRepo } from '../src/store/repos/logs.js';
import { finished, packFixture, upload } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { createIdleService } from './helpers/logs.js';
import { sleep, waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';
import { startSyslogServer, type SyslogServer } from './helpers/syslog.js';

let dir: string;
let syslog: SyslogServer;
let server: TestServer;
let api: Client;
let owner: TestUser;
let stranger: TestUser;
const env = () => ({
  SLIPWAY_LOG_STREAM_ALLOW_PRIVATE: '1',
  SLIPWAY_LOG_STREAM_CA_FILE: syslog.caFile,
  SLIPWAY_LOG_STREAM_BACKOFF_MS: '200',
});

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'slipway-syslog-'));
  syslog = await startSyslogServer(dir);
  server = await bootServer(env());
  api = client(server.url);
  owner = await signUp(api);
  stranger = await signUp(api);
});
afterAll(async () => {
  await server?.close();
  await syslog?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('log stream settings', () => {
  it("answer Render's shapes, never the token, and another workspace's are 404", async () => {
    const url = `/v1/logs/streams/owner/${owner.workspaceId}`;
    expect((await api.get(url, owner)).status).toBe(404); // none yet
    const bad = await api.put(url, { endpoint: 'no port', preview: 'send' }, owner);
    expect(bad.status).toBe(400);
    expect((await api.put(url, { preview: 'send' }, owner)).status).toBe(400); // an endpoint is needed at first
    expect(
      (await api.put(url, { endpoint: 'logs.example.com:6514', token: 'a b', preview: 'send' }, owner)).status,
    ).toBe(400);
    const put = await api.put(
      url,
      { endpoint: 'logs.example.com:6514', token: 'secret-token', preview: 'drop' },
      owner,
    );
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual({ ownerId: owner.workspaceId, endpoint: 'logs.example.com:6514', preview: 'drop' });
    expect(put.text).not.toContain('secret-token');
    // The endpoint stays when only `preview` changes.
    const again = await api.put(url, { preview: 'send' }, owner);
    expect(again.body).toEqual({ ownerId: owner.workspaceId, endpoint: 'logs.example.com:6514', preview: 'send' });
    expect((await api.get(url, owner)).body).toEqual(again.body);

    expect((await api.get(url, stranger)).status).toBe(404);
    expect((await api.put(url, { endpoint: 'x.example.com:1', preview: 'send' }, stranger)).status).toBe(404);
    expect((await api.delete(url, stranger)).status).toBe(404);

    const svc = await api.post(
      '/v1/services',
      { type: 'web_service', name: 'quiet', autoDeploy: 'no', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const resource = `/v1/logs/streams/resource/${svc.body.service.id}`;
    expect((await api.put(resource, { setting: 'send' }, owner)).status).toBe(400); // send needs an endpoint
    expect((await api.put(resource, { setting: 'drop', endpoint: 'a.example.com:1' }, owner)).status).toBe(400);
    const sent = await api.put(resource, { setting: 'send', endpoint: 'other.example.com:6514', token: 't0k' }, owner);
    expect(sent.body).toEqual({ resourceId: svc.body.service.id, endpoint: 'other.example.com:6514', setting: 'send' });
    const dropped = await api.put(resource, { setting: 'drop' }, owner);
    expect(dropped.body).toEqual({ resourceId: svc.body.service.id, setting: 'drop' });
    expect((await api.get(resource, owner)).body).toEqual(dropped.body);
    const list = await api.get(`/v1/logs/streams/resource?ownerId=${owner.workspaceId}&setting=drop`, owner);
    expect(list.body).toEqual([dropped.body]);
    expect((await api.get(`/v1/logs/streams/resource?ownerId=${owner.workspaceId}&setting=send`, owner)).body).toEqual(
      [],
    );
    expect((await api.get(resource, stranger)).status).toBe(404);
    expect((await api.put(resource, { setting: 'drop' }, stranger)).status).toBe(404);
    expect((await api.get(`/v1/logs/streams/resource?ownerId=${owner.workspaceId}`, stranger)).status).toBe(404);
    expect((await api.get('/v1/logs/streams/resource', stranger)).body).toEqual([]);
    expect((await api.delete(resource, owner)).status).toBe(204);
    expect((await api.get(resource, owner)).status).toBe(404);
    expect((await api.delete(url, owner)).status).toBe(204);
    expect((await api.get(url, owner)).status).toBe(404);
  });

  it('connections refuse private addresses unless allowed, and servers whose certificate is not trusted', async () => {
    const guarded = createSyslogConnector({ allowPrivate: false, connectTimeoutMs: 2000, writeTimeoutMs: 2000 });
    await expect(guarded(`127.0.0.1:${syslog.port}`)).rejects.toThrow(/private or reserved/);
    await expect(guarded(`localhost:${syslog.port}`)).rejects.toThrow(/private or reserved/);
    const untrusted = createSyslogConnector({ allowPrivate: true, connectTimeoutMs: 2000, writeTimeoutMs: 2000 });
    await expect(untrusted(`127.0.0.1:${syslog.port}`)).rejects.toThrow(/certificate/);
  });
});

describe('log label values', () => {
  it("lists a label's values among the matching entries, and another workspace's resource is 404", async () => {
    const svc = await api.post(
      '/v1/services',
      { type: 'web_service', name: 'labelled', autoDeploy: 'no', serviceDetails: { runtime: 'node' } },
      owner,
    );
    const resourceId = svc.body.service.id as string;
    const entry = (instanceId: string, level: string, type: 'app' | 'request', message: string) => ({
      workspaceId: owner.workspaceId,
      resourceId,
      instanceId,
      type,
      level,
      message,
      timeMs: Date.now() - 60_000,
      ...(type === 'request' ? { method: 'GET', statusCode: 200, host: 'a.example.com', path: '/' } : {}),
    });
    await createLogRepo(server.slipway.store.db).insertBatch(
      [
        entry('i-1', 'info', 'app', 'one'),
        entry('i-2', 'error', 'app', 'two'),
        entry('i-2', 'info', 'request', 'GET /'),
      ],
      [],
      false,
    );
    const values = async (query: string, as = owner) =>
      api.get(`/v1/logs/values?ownerId=${owner.workspaceId}&resource=${resourceId}&${query}`, as);
    expect((await values('label=level')).body).toEqual(['error', 'info']);
    expect((await values('label=instance')).body).toEqual(['i-1', 'i-2']);
    expect((await values('label=type')).body).toEqual(['app', 'request']);
    expect((await values('label=method')).body).toEqual(['GET']);
    expect((await values('label=statusCode')).body).toEqual(['200']);
    expect((await values('label=instance&level=error')).body).toEqual(['i-2']);
    expect((await values('label=instance&limit=1')).body).toHaveLength(1);
    expect((await values('label=resource')).status).toBe(400);
    expect((await values('label=level', stranger)).status).toBe(404);
    const elsewhere = await api.get(
      `/v1/logs/values?ownerId=${stranger.workspaceId}&resource=${resourceId}&label=level`,
      stranger,
    );
    expect(elsewhere.status).toBe(404);
  });
});

describe('log stream isolation', () => {
  it("a workspace's dead endpoint does not hold up another's stream; preview: drop keeps previews' lines out", async () => {
    // Another workspace streams to an endpoint that takes the connection and never answers the TLS handshake.
    const sockets = new Set<Socket>();
    const dead = net.createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const other = await signUp(api);
    const deadPort = (dead.address() as AddressInfo).port;
    const stuck = await api.put(
      `/v1/logs/streams/owner/${other.workspaceId}`,
      { endpoint: `127.0.0.1:${deadPort}`, preview: 'send' },
      other,
    );
    expect(stuck.status).toBe(200);
    const mine = await signUp(api);
    const [plain, preview] = [await createIdleService(api, mine, 'plain'), await createIdleService(api, mine, 'pr')];
    await server.slipway.store.executeSql(`update services set details = details || $1::jsonb where id = $2`, [
      JSON.stringify({ parentServer: { id: plain, name: 'plain' } }),
      preview,
    ]);
    const put = await api.put(
      `/v1/logs/streams/owner/${mine.workspaceId}`,
      { endpoint: `127.0.0.1:${syslog.port}`, preview: 'drop' },
      mine,
    );
    expect(put.status).toBe(200);
    const line = (resourceId: string, message: string) => ({
      workspaceId: mine.workspaceId,
      resourceId,
      type: 'app' as const,
      level: 'info',
      message,
      timeMs: Date.now(),
    });
    const repo = createLogRepo(server.slipway.store.db);
    for (const workspace of [other.workspaceId, mine.workspaceId])
      await repo.insertBatch(
        Array.from({ length: 50 }, (_, i) => ({
          ...line(workspace === mine.workspaceId ? plain : 'srv-x', `isolated ${i}`),
          workspaceId: workspace,
        })),
        [],
        false,
      );
    await repo.insertBatch(
      Array.from({ length: 50 }, (_, i) => line(preview, `preview ${i}`)),
      [],
      false,
    );
    const got = () => syslog.frames.filter((f) => f.message.startsWith('isolated ') && f.appName === plain);
    await waitFor('the lines of the workspace whose endpoint answers', async () => got().length === 50, 15_000, 50);
    expect(sockets.size).toBeGreaterThan(0); // the dead endpoint was being tried meanwhile
    await sleep(500);
    expect(syslog.frames.filter((f) => f.appName === preview)).toEqual([]);
    for (const who of [other, mine])
      expect((await api.delete(`/v1/logs/streams/owner/${who.workspaceId}`, who)).status).toBe(204);
    for (const socket of sockets) socket.destroy();
    dead.close();
  });
});

describe('log stream forwarding', () => {
  /** The "out <n>" numbers of `serviceId` the receiver got, in the order it got them. */
  const outs = (serviceId: string) =>
    syslog.frames
      .filter((f) => f.appName === serviceId)
      .map((f) => /^out (\d+) /.exec(f.message)?.[1])
      .filter((n) => n !== undefined)
      .map(Number);
  const consecutive = (numbers: number[]) => numbers.map((_, i) => numbers[0]! + i);
  const moreThan = (serviceId: string, n: number) =>
    waitFor(`more than ${n} lines forwarded`, async () => outs(serviceId).length > n, 30_000, 100);

  it("forwards an app's lines with the token, and loses or repeats none across a restart and an endpoint outage; drop stops them", async () => {
    const created = await api.post(
      '/v1/services',
      { type: 'web_service', name: 'printer', serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' } },
      owner,
    );
    const service = created.body.service as { id: string; name: string };
    const up = await upload(api, owner, service.id, await packFixture('log-printer'));
    // A loaded 2-core machine (CI runs two files at once) may take longer than deployFixture's minute.
    expect((await finished(api, owner, service.id, up.body.deployId, 180_000)).status).toBe('live');
    const url = `/v1/logs/streams/owner/${owner.workspaceId}`;
    const put = await api.put(url, { endpoint: `127.0.0.1:${syslog.port}`, token: 'tok-123', preview: 'send' }, owner);
    expect(put.status, put.text).toBe(200);
    await moreThan(service.id, 20);
    expect(syslog.invalid).toEqual([]);
    const first = syslog.frames.find((f) => f.appName === service.id && f.message.startsWith('out '))!;
    expect(first.hostname).toBe(service.name);
    expect(first.msgId).toBe('app');
    expect(first.procId).not.toBe('-'); // the instance
    expect(first.pri).toBe(8 + 6); // user-level, informational
    expect(first.structuredData).toMatch(/^\[tok-123@41058\]\[meta sequenceId="\d+"\]$/);
    expect(first.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    // A restart on the same data: the stream resumes at its cursor (the app printed on while Slipway was down).
    const beforeStop = outs(service.id).length;
    await server.stop();
    await sleep(1500);
    server = await bootServer(env(), { dataDir: server.dataDir, databaseUrl: server.databaseUrl });
    api = client(server.url);
    await moreThan(service.id, beforeStop + 150);
    expect(outs(service.id)).toEqual(consecutive(outs(service.id)));

    // The endpoint goes away for a while, then comes back: it gets the backlog, in order, once.
    await syslog.down();
    const atOutage = outs(service.id).length;
    await sleep(2500);
    expect(outs(service.id).length).toBe(atOutage);
    await syslog.up();
    await moreThan(service.id, atOutage + 200);
    expect(outs(service.id)).toEqual(consecutive(outs(service.id)));
    expect(syslog.invalid).toEqual([]);

    // A drop override stops the service's lines; deleting it brings them back.
    const resource = `/v1/logs/streams/resource/${service.id}`;
    expect((await api.put(resource, { setting: 'drop' }, owner)).status).toBe(200);
    await sleep(1000);
    const atDrop = outs(service.id).length;
    await sleep(2000);
    expect(outs(service.id).length).toBe(atDrop);
    expect((await api.delete(resource, owner)).status).toBe(204);
    await moreThan(service.id, atDrop + 20);
  }, 300_000);
});
