/**
 * Issue 10's low findings: cross-site WebSocket upgrades with a session cookie, archive bombs refused
 * at their first entry past a limit (and quickly), and what a crash of Slipway leaves behind (partial
 * uploads, a build that never got its build_ended event).
 */
import http from 'node:http';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { finished, packFixture, processesOf, upload } from './helpers/apps.js';
import { manyEntryTarGz, manyEntryZip } from './helpers/bombs.js';
import { client, createApiKey, signUp, type TestUser } from './helpers/client.js';
import { freePort, freshStore, spawnSlipway, waitFor, waitForHealthy, type SlipwayProcess } from './helpers/process.js';
import { useServer } from './helpers/server.js';

const MAX_BYTES = 1024 * 1024;
const t = useServer({ SLIPWAY_ARCHIVE_MAX_BYTES: String(MAX_BYTES) });

/** Opens /v1/logs/subscribe; resolves 'open', or the status and body of the refusal. */
function subscribe(
  headers: Record<string, string>,
): Promise<{ opened: true } | { opened: false; status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.server.url.replace('http', 'ws')}/v1/logs/subscribe`, { headers });
    ws.once('open', () => {
      ws.close();
      resolve({ opened: true });
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res
        .setEncoding('utf8')
        .on('data', (c: string) => (text += c))
        .on('end', () => resolve({ opened: false, status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    ws.once('error', (err) => reject(err));
  });
}

describe('WebSocket upgrades authenticated by the session cookie', () => {
  let owner: TestUser;
  beforeAll(async () => {
    owner = await signUp(t.api);
  });
  const cookie = () => `slipway_session=${owner.cookie}`;

  it("are refused with 403, before the upgrade, from another site's Origin", async () => {
    const refused = await subscribe({ cookie: cookie(), origin: 'https://evil.example' });
    expect(refused).toMatchObject({
      opened: false,
      status: 403,
      body: { code: 'forbidden', message: expect.stringMatching(/cross-site/) },
    });
    expect(refused.opened === false && refused.body.id).toBeTruthy();
  });

  it('follow the same rule as unsafe requests: an Origin of this server, or a header only scripts can set', async () => {
    expect(await subscribe({ cookie: cookie(), origin: t.server.url })).toEqual({ opened: true });
    expect(await subscribe({ cookie: cookie(), 'x-requested-with': 'cli' })).toEqual({ opened: true });
    expect(await subscribe({ cookie: cookie(), referer: 'https://evil.example/page' })).toMatchObject({ status: 403 });
    expect(await subscribe({ cookie: cookie() })).toMatchObject({ status: 403 });
  });

  it('leaves Bearer-authenticated upgrades alone, whatever their Origin', async () => {
    const key = await createApiKey(t.api, owner);
    expect(await subscribe({ authorization: `Bearer ${key.token}`, origin: 'https://evil.example' })).toEqual({
      opened: true,
    });
  });
});

describe('archive bombs uploaded through the API', () => {
  let owner: TestUser;
  let serviceId: string;
  beforeAll(async () => {
    owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      { type: 'web_service', name: 'bombs', autoDeploy: 'no', serviceDetails: { runtime: 'node' } },
      owner,
    );
    serviceId = created.body.service.id;
  });

  /** The most files seen in the upload's check dir (where it is unpacked to be checked), polled until `done` settles. */
  async function mostUnpacked(done: Promise<unknown>): Promise<number> {
    const incoming = path.join(t.server.dataDir, 'services', serviceId, 'sources', '.incoming');
    let settled = false;
    void done.finally(() => (settled = true));
    let most = 0;
    while (!settled) {
      try {
        for (const name of readdirSync(incoming).filter((n) => n.endsWith('.check')))
          most = Math.max(most, readdirSync(path.join(incoming, name)).length);
      } catch {
        // not there (yet, or any more)
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return most;
  }

  /** Uploads `archive`; expects the documented 400 with nothing unpacked first, and returns how long the refusal took. */
  async function refusal(archive: Buffer, message: RegExp, contentType = 'application/gzip'): Promise<number> {
    const began = performance.now();
    const uploaded = upload(t.api, owner, serviceId, archive, contentType);
    const unpacked = await mostUnpacked(uploaded);
    const res = await uploaded;
    const ms = performance.now() - began;
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'bad_request', message: expect.stringMatching(message) });
    expect(unpacked).toBe(0); // refused from the headers: not one file written before
    const incoming = path.join(t.server.dataDir, 'services', serviceId, 'sources', '.incoming');
    expect(existsSync(incoming) ? readdirSync(incoming) : []).toEqual([]); // neither the upload nor a half-unpacked check dir is left
    return ms;
  }

  // Before: every entry up to the 50,001st was unpacked (and then removed) first: 11-25 s.
  it('refuses a 100,000-file tar.gz at entry 50,001 without unpacking anything, in well under 2 s', async () => {
    const ms = await refusal(
      manyEntryTarGz(100_000),
      /^archive has more than 50000 entries \(limit reached at "f50000"\)$/,
    );
    console.log(`100,000-file tar.gz refused in ${Math.round(ms)} ms`);
    expect(ms).toBeLessThan(3000);
  });

  it('refuses a 100,000-file zip from its end record at once', async () => {
    const ms = await refusal(
      manyEntryZip(Array.from({ length: 100_000 }, (_, i) => ({ name: `f${i}` }))),
      /^archive has 100000 entries, more than the limit of 50000$/,
      'application/zip',
    );
    console.log(`100,000-file zip refused in ${Math.round(ms)} ms`);
    expect(ms).toBeLessThan(3000);
  });

  // Before: the 40,000 small files in front of the oversized one were unpacked first.
  it('refuses a tar.gz whose last entry goes past maxBytes before unpacking the 40,000 in front of it', async () => {
    const ms = await refusal(
      manyEntryTarGz(40_000, { name: 'huge', size: 2 * MAX_BYTES }),
      /^archive unpacks to more than 1048576 bytes \(limit reached at "huge"\)$/,
    );
    console.log(`40,000 files + an oversized one (tar.gz) refused in ${Math.round(ms)} ms`);
    expect(ms).toBeLessThan(3000);
  });

  it('refuses a zip whose last entry claims more than maxBytes before unpacking the 40,000 in front of it', async () => {
    const entries = [
      ...Array.from({ length: 40_000 }, (_, i) => ({ name: `f${i}` })),
      { name: 'huge', data: Buffer.alloc(10), claimedSize: 2 * MAX_BYTES },
    ];
    const ms = await refusal(
      manyEntryZip(entries),
      /^archive unpacks to more than 1048576 bytes \(limit reached at "huge"\)$/,
      'application/zip',
    );
    console.log(`40,000 files + an oversized one (zip) refused in ${Math.round(ms)} ms`);
    expect(ms).toBeLessThan(5000); // the central directory is read entry by entry: about 0.6 s here when idle
  });
});

describe('a crash of Slipway', () => {
  let proc: SlipwayProcess | undefined;
  let store: Awaited<ReturnType<typeof freshStore>>;
  let partial: http.ClientRequest | undefined;
  afterAll(async () => {
    partial?.destroy();
    await proc?.kill();
    await store?.remove();
  });

  it('leaves no partial upload behind, and the interrupted build gets its build_ended event', async () => {
    store = await freshStore();
    const [port, routerPort] = [await freePort(), await freePort()];
    const env = { ...store.env, SLIPWAY_PORT: String(port), SLIPWAY_ROUTER_PORT: String(routerPort) };
    proc = spawnSlipway(env);
    const url = `http://127.0.0.1:${port}`;
    await waitForHealthy(url);
    const api = client(url);
    const owner = await signUp(api);
    const created = await api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: 'crashy',
        serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand: 'sleep 60' } },
      },
      owner,
    );
    const service = created.body.service;

    // A build in flight...
    const building = await upload(api, owner, service.id, await packFixture('node-web'));
    const deployId = building.body.deployId as string;
    await waitFor(
      'the build to start',
      async () =>
        (await api.get(`/v1/services/${service.id}/deploys/${deployId}`, owner)).body.status === 'build_in_progress',
    );
    await waitFor('the build command to run', async () => processesOf(service.id).length > 0);
    // ...and an upload half received, when Slipway dies.
    partial = http.request(`${url}/v1/services/${service.id}/source/upload`, {
      method: 'POST',
      headers: {
        cookie: `slipway_session=${owner.cookie}`,
        'x-requested-with': 'test',
        'content-type': 'application/gzip',
        'content-length': String(10 * 1024 * 1024),
      },
    });
    partial.on('error', () => undefined);
    partial.write(Buffer.alloc(256 * 1024, 1));
    const incoming = path.join(store.dataDir, 'services', service.id, 'sources', '.incoming');
    await waitFor(
      'the partial upload on disk',
      async () => existsSync(incoming) && readdirSync(incoming).some((f) => statSync(path.join(incoming, f)).size > 0),
    );
    proc.child.kill('SIGKILL');
    await proc.exited;
    partial.destroy();
    await waitFor('the build to die with Slipway', async () => processesOf(service.id).length === 0, 15_000);
    expect(readdirSync(incoming).length).toBeGreaterThan(0);

    proc = spawnSlipway(env);
    await waitForHealthy(url);
    expect(readdirSync(incoming)).toEqual([]);
    const deploy = await finished(api, owner, service.id, deployId);
    expect(deploy).toMatchObject({ status: 'build_failed', failureReason: expect.stringMatching(/interrupted/) });
    const events = (await api.get(`/v1/services/${service.id}/events?limit=100`, owner)).body.map((e: any) => e.event);
    const ofDeploy = (type: string) => events.filter((e: any) => e.type === type && e.details.deployId === deployId);
    expect(ofDeploy('build_started')).toHaveLength(1);
    expect(ofDeploy('build_ended')).toEqual([
      expect.objectContaining({
        details: expect.objectContaining({
          buildStatus: 'failed',
          failureReason: expect.stringMatching(/interrupted/),
          reason: { failure: { evicted: true, interrupted: true } },
        }),
      }),
    ]);
    expect(ofDeploy('deploy_ended')).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ finalStatus: 'build_failed' }) }),
    ]);
  }, 90_000);
});
