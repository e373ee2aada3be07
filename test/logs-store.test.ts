/**
 * The log store end to end: a real fixture app printing known lines, collected from its
 * output files, read back through GET /v1/logs and the /v1/logs/subscribe WebSocket.
 */
import { Ajv } from 'ajv';
import ajvFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { loadRenderReference } from './helpers/render-reference.js';
import { bootServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let api: Client;
let owner: TestUser, stranger: TestUser;
let serviceId: string;
let deployId: string;

type Entry = { id: string; message: string; timestamp: string; labels: Array<{ name: string; value: string }> };
const label = (e: Entry, name: string) => e.labels.find((l) => l.name === name)?.value;
const since = new Date(Date.now() - 60_000).toISOString();

async function logs(query: string, as: TestUser = owner) {
  return api.get(`/v1/logs?startTime=${since}&${query}`, as);
}

/** Opens a subscription; resolves once the upgrade is done. */
function subscribe(
  query: string,
  as: TestUser = owner,
): Promise<{ ws: WebSocket; entries: Entry[]; closed: Promise<{ code: number; reason: string }> }> {
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}/v1/logs/subscribe?${query}`, {
    headers: { cookie: `slipway_session=${as.cookie}`, 'x-requested-with': 'test' },
  });
  const entries: Entry[] = [];
  ws.on('message', (data) => entries.push(JSON.parse(String(data))));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, entries, closed }));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

/** Numbers of "out <n>" lines, in the order given. */
const outNumbers = (entries: Entry[]) =>
  entries
    .map((e) => /^out (\d+) /.exec(e.message)?.[1])
    .filter((n): n is string => !!n)
    .map(Number);

beforeAll(async () => {
  server = await bootServer({ SLIPWAY_LOG_STREAM_BUFFER_BYTES: '2048' });
  api = client(server.url);
  [owner, stranger] = await Promise.all([signUp(api), signUp(api)]);
  const { service, deploy } = await deployFixture(api, owner, 'log-printer', {
    serviceDetails: {
      runtime: 'node',
      healthCheckPath: '/healthz',
      envSpecificDetails: { buildCommand: 'echo "build step one"; echo "build step two" >&2' },
    },
  });
  expect(deploy.status).toBe('live');
  serviceId = service.id;
  deployId = deploy.id;
  // More than the paging test's 100 are stored before any test reads: on a busy machine the store can lag the app.
  await waitFor(
    '150 out lines stored',
    async () => (outNumbers((await logs(`resource=${serviceId}&text=out&limit=1`)).body?.logs ?? [])[0] ?? 0) >= 150,
    30_000,
  );
}, 60_000);
afterAll(() => server?.close());

describe('GET /v1/logs', () => {
  it("returns Render's shape with labels, levels parsed from JSON, multi-byte text intact, long lines cut", async () => {
    const res = await logs(`resource=${serviceId}&direction=forward&limit=100&type=app`);
    expect(res.status).toBe(200);
    const ajv = new Ajv({ strict: false, allErrors: true });
    (ajvFormats as unknown as typeof ajvFormats.default)(ajv);
    // Slipway adds one label name Render lacks: `deploy` (issue 4 asks for it).
    const doc = loadRenderReference();
    doc.paths['/logs/subscribe'].get.responses['101'].content[
      'application/json'
    ].schema.properties.labels.items.properties.name.enum.push('deploy');
    ajv.addSchema(doc, 'render');
    const validate = ajv.getSchema('render#/components/responses/Logs200Response/content/application~1json/schema')!;
    expect(validate(res.body), JSON.stringify(validate.errors)).toBe(true);
    const entries: Entry[] = res.body.logs;
    const json = entries.find((e) => e.message.includes('json with a level'))!;
    expect(label(json, 'level')).toBe('warn');
    expect(label(json, 'resource')).toBe(serviceId);
    expect(label(json, 'deploy')).toBe(deployId);
    expect(label(json, 'type')).toBe('app');
    expect(label(json, 'instance')).toMatch(new RegExp(`^${serviceId}-`));
    expect(entries.some((e) => e.message === 'multi-byte: héllo wörld — 日本語 🚀')).toBe(true);
    const long = entries.find((e) => e.message.startsWith('Lxxx'))!;
    expect(Buffer.byteLength(long.message)).toBeLessThanOrEqual(16 * 1024 + 20);
    expect(long.message.endsWith('…[truncated]')).toBe(true);
    // A line that looks like labels is only ever a message.
    const forged = entries.find((e) => e.message.includes('srv-forged'))!;
    expect(label(forged, 'resource')).toBe(serviceId);
    expect(label(forged, 'level')).toBe('info');
    // stderr → error.
    const err = (await logs(`resource=${serviceId}&text=err&level=error&limit=5`)).body.logs as Entry[];
    expect(err.length).toBeGreaterThan(0);
    expect(err.every((e) => /^err \d+$/.test(e.message) && label(e, 'level') === 'error')).toBe(true);
  });

  it('keeps lines in order and pages with nextStartTime/nextEndTime, no gaps or repeats', async () => {
    const seen: number[] = [];
    const query = `resource=${serviceId}&text=out&direction=forward&limit=37`;
    let start = since;
    const end = new Date().toISOString();
    for (let page = 0; page < 6; page++) {
      const res = await api.get(
        `/v1/logs?startTime=${encodeURIComponent(start)}&endTime=${encodeURIComponent(end)}&${query}`,
        owner,
      );
      expect(res.status).toBe(200);
      seen.push(...outNumbers(res.body.logs));
      if (!res.body.hasMore) break;
      start = res.body.nextStartTime;
    }
    expect(seen.length).toBeGreaterThan(100);
    expect(seen).toEqual(seen.map((_, i) => seen[0]! + i)); // consecutive: ordered, nothing lost or repeated
    // Backward (the default) is newest first.
    const back = outNumbers((await logs(`resource=${serviceId}&text=out&limit=10`)).body.logs);
    expect(back).toEqual([...back].sort((a, b) => b - a));
  });

  it('filters by type, level, text (substring, wildcard, regex), instance and time', async () => {
    const build = (await logs(`resource=${serviceId}&type=build&direction=forward`)).body.logs as Entry[];
    expect(build.map((e) => e.message)).toEqual(expect.arrayContaining(['build step one', 'build step two']));
    expect(build.every((e) => label(e, 'deploy') === deployId)).toBe(true);
    const regex = (await logs(`resource=${serviceId}&text=${encodeURIComponent('/^out 1[0-9] /')}&limit=100`)).body
      .logs as Entry[];
    expect(regex.length).toBe(10);
    const wild = (await logs(`resource=${serviceId}&text=${encodeURIComponent('out 2*5 ')}&limit=100`)).body
      .logs as Entry[];
    expect(wild.every((e) => /out 2.*5 /.test(e.message))).toBe(true);
    expect(wild.length).toBeGreaterThan(0);
    const warn = (await logs(`resource=${serviceId}&level=warn`)).body.logs as Entry[];
    expect(warn.map((e) => e.message)).toEqual([JSON.stringify({ level: 'warn', msg: 'json with a level' })]);
    const instance = label(warn[0]!, 'instance')!;
    expect((await logs(`instance=${instance}&limit=3`)).body.logs).toHaveLength(3);
    expect((await logs(`instance=nope&limit=3`)).body.logs).toHaveLength(0);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await api.get(`/v1/logs?startTime=${future}`, owner)).body.logs).toEqual([]);
  });

  it('logs requests through the router with method, path, status, host', async () => {
    const slug = (await api.get(`/v1/services/${serviceId}`, owner)).body.slug;
    expect((await viaRouter(server.slipway.routerPort, slug, '/hello?x=1')).status).toBe(200);
    const found = await waitFor('request log', async () => {
      const r = (await logs(`resource=${serviceId}&type=request&path=/hello*`)).body.logs as Entry[];
      return r.length ? r[0] : undefined;
    });
    expect(label(found, 'method')).toBe('GET');
    expect(label(found, 'path')).toBe('/hello?x=1');
    expect(label(found, 'statusCode')).toBe('200');
    expect(label(found, 'host')).toBe(`${slug}.localhost`);
    // The instance that answered, as on its own output lines.
    const instances = (await api.get(`/v1/services/${serviceId}/instances`, owner)).body as Array<{ id: string }>;
    expect(instances.map((i) => i.id)).toContain(label(found, 'instance'));
    expect(found.message).toMatch(/^GET \/hello\?x=1 200 [\d.]+ms \d+B$/);
    expect((await logs(`type=request&statusCode=2*&method=GET`)).body.logs.length).toBeGreaterThan(0);
  });

  /** Deploys a worker running `node -e <script>` (which then idles); resolves with its first `count` entries. */
  async function workerOutput(name: string, script: string, count: number) {
    const { service } = await deployFixture(api, owner, 'worker', {
      type: 'background_worker',
      name,
      serviceDetails: {
        runtime: 'node',
        envSpecificDetails: { startCommand: `node -e "${script}; setInterval(() => {}, 1000)"` },
      },
    });
    const entries = await waitFor(
      `${count} entries of ${name}`,
      async () => {
        const r = (await logs(`resource=${service.id}&type=app&direction=forward`)).body.logs as Entry[];
        return r.length >= count ? r : undefined;
      },
      10_000,
    );
    return { service, entries };
  }

  it('stores a line without a newline once the output pauses, while the app runs', async () => {
    const { service, entries } = await workerOutput('prompt', "process.stdout.write('waiting for input...')", 1);
    expect(entries.map((e) => e.message)).toEqual(['waiting for input...']);
    // Stored while its instance still runs (not only when it stops).
    const running = (await api.get(`/v1/services/${service.id}/instances`, owner)).body as Array<{ id: string }>;
    expect(running.map((i) => i.id)).toEqual([label(entries[0]!, 'instance')]);
  });

  it('stores a line holding a NUL byte (which Postgres text refuses) with U+FFFD, and the lines after it', async () => {
    const { entries } = await workerOutput('nul-printer', "console.log('before\\0after'); console.log('next line')", 2);
    expect(entries.map((e) => e.message)).toEqual(['before\uFFFDafter', 'next line']);
  });

  it('keeps workspaces apart and refuses bad filters with 400', async () => {
    expect((await logs(`resource=${serviceId}`, stranger)).status).toBe(404);
    expect((await logs('', stranger)).body.logs).toEqual([]);
    expect((await logs(`ownerId=${owner.workspaceId}`, stranger)).status).toBe(404);
    for (const bad of [
      'type=nope',
      'limit=101',
      'limit=0',
      'direction=sideways',
      `text=${encodeURIComponent('/(/')}`,
      'statusCode=abc',
      'startTime=yesterday',
    ]) {
      const res = await api.get(`/v1/logs?${bad}`, owner);
      expect(res.status, bad).toBe(400);
      expect(res.body.code, bad).toMatch(/^(bad_request|validation_failed)$/);
      expect(res.body.id).toBe(res.headers.get('request-id'));
    }
    expect((await api.get(`/v1/logs?startTime=${new Date().toISOString()}&endTime=${since}`, owner)).status).toBe(400);
    expect((await api.get('/v1/logs')).status).toBe(401);
  });
});

describe('GET /v1/logs/subscribe', () => {
  it('refuses bad filters, other workspaces and missing credentials before the upgrade', async () => {
    await expect(subscribe('type=nope')).rejects.toThrow('upgrade refused: 400');
    await expect(subscribe('resource=%00')).rejects.toThrow('upgrade refused: 400'); // a NUL Postgres cannot look up
    await expect(subscribe(`resource=${serviceId}`, stranger)).rejects.toThrow('upgrade refused: 404');
    await expect(subscribe('', { ...owner, cookie: 'nope' })).rejects.toThrow('upgrade refused: 401');
    expect((await api.get('/v1/logs/subscribe', owner)).status).toBe(400);
  });

  it('tails live lines in order; a reconnect with the last id misses nothing and repeats nothing', async () => {
    const first = await subscribe(`resource=${serviceId}&text=out`);
    await waitFor('20 live lines', async () => first.entries.length >= 20, 10_000, 20);
    first.ws.close();
    await first.closed;
    const lastId = first.entries[first.entries.length - 1]!.id;
    await new Promise((r) => setTimeout(r, 500)); // lines printed while disconnected
    const second = await subscribe(`resource=${serviceId}&text=out&afterId=${lastId}`);
    await waitFor('more lines', async () => second.entries.length >= 40, 10_000, 20);
    second.ws.close();
    const all = outNumbers([...first.entries, ...second.entries]);
    expect(all).toEqual(all.map((_, i) => all[0]! + i));
    expect(first.entries.every((e) => label(e, 'resource') === serviceId && typeof e.timestamp === 'string')).toBe(
      true,
    );
  });

  it('replays from startTime, then tails', async () => {
    const from = new Date(Date.now() - 2_000).toISOString();
    const sub = await subscribe(`resource=${serviceId}&text=out&startTime=${from}`);
    await waitFor('replay and live', async () => sub.entries.length >= 150, 10_000, 20);
    sub.ws.close();
    const numbers = outNumbers(sub.entries);
    expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i));
    expect(Date.parse(sub.entries[0]!.timestamp)).toBeGreaterThanOrEqual(Date.parse(from) - 1);
  });

  it('stops at endTime with close code 1000: a past range is replayed, a future one tailed until then', async () => {
    const from = new Date(Date.now() - 3_000).toISOString();
    const pastEnd = new Date(Date.now() - 1_000).toISOString();
    const past = await subscribe(`resource=${serviceId}&text=out&startTime=${from}&endTime=${pastEnd}`);
    expect(await past.closed).toEqual({ code: 1000, reason: 'endTime reached' });
    const expected = (
      await api.get(
        `/v1/logs?resource=${serviceId}&text=out&direction=forward&limit=100&startTime=${from}&endTime=${pastEnd}`,
        owner,
      )
    ).body.logs as Entry[];
    expect(expected.length).toBeGreaterThan(10);
    expect(past.entries.slice(0, expected.length).map((e) => e.id)).toEqual(expected.map((e) => e.id));
    for (const e of past.entries) expect(Date.parse(e.timestamp)).toBeLessThanOrEqual(Date.parse(pastEnd));

    const futureEnd = new Date(Date.now() + 1_500).toISOString();
    const future = await subscribe(`resource=${serviceId}&text=out&endTime=${futureEnd}`);
    expect(await future.closed).toEqual({ code: 1000, reason: 'endTime reached' });
    expect(future.entries.length).toBeGreaterThan(10); // tailed live lines until then
    expect(Date.parse(future.entries.at(-1)!.timestamp)).toBeLessThanOrEqual(Date.parse(futureEnd));
    await expect(subscribe(`startTime=${futureEnd}&endTime=${from}`)).rejects.toThrow('upgrade refused: 400');
  });

  it('replays everything after an id in id order (ids past 10, 100, 1000 stay numeric)', async () => {
    const sub = await subscribe(`resource=${serviceId}&text=out&afterId=0`);
    await waitFor('300 replayed lines', async () => sub.entries.length >= 300, 10_000, 20);
    sub.ws.close();
    const ids = sub.entries.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(ids[ids.length - 1]).toBeGreaterThan(100);
    const numbers = outNumbers(sub.entries);
    expect(numbers).toEqual(numbers.map((_, i) => i));
  });

  it('closes a consumer that stops reading with 4008 and the id to resume from', async () => {
    // 40 MB of stored lines to replay: more than the kernel's socket buffers hold.
    await server.slipway.store.executeSql(
      `insert into logs (workspace_id, resource_id, type, level, message, timestamp)
      select $1, $2, 'app', 'info', 'bulk ' || n || ' ' || repeat('y', 4000), now() - interval '20 seconds' + n * interval '1 microsecond'
      from generate_series(1, 10000) n`,
      [owner.workspaceId, serviceId],
    );
    const sub = await subscribe(`resource=${serviceId}&text=bulk&startTime=${since}`);
    const socket = (sub.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    socket.pause(); // stop reading: the server's buffer fills
    await new Promise((r) => setTimeout(r, 5000));
    socket.resume();
    const { code, reason } = await Promise.race([
      sub.closed,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('not closed')), 20_000)),
    ]).catch(async (err) => {
      sub.ws.terminate();
      throw err;
    });
    expect(code).toBe(4008);
    expect(reason).toMatch(/afterId=\d+/);
  }, 60_000);
});
