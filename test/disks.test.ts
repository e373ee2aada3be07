/**
 * Render's persistent disks (`/v1/disks`, docs/deploys.md "Disks") on the real runtime: a disk is a loop-mounted ext4
 * image bound at its mountPath in the service's sandbox. Its files survive deploys and a Slipway restart, a write
 * past its size fails inside the app, a snapshot restores an older state, and no other service (of the workspace or
 * another) sees it. A service with a disk runs one instance.
 */
import { Ajv } from 'ajv';
import ajvFormats from 'ajv-formats';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployFixture, FIXTURES, finished, viaRouter } from './helpers/apps.js';
import { allDeploysSettled, createUploaded, servicesByName, syncEnded } from './helpers/blueprints.js';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { loadRenderReference } from './helpers/render-reference.js';
import { detectDiskTools } from '../src/runtime/local/build-disks.js';
import { createServiceDisks } from '../src/runtime/local/service-disks.js';
import { bootServer, type TestServer } from './helpers/server.js';

const ajv = new Ajv({ strict: false, allErrors: true });
(ajvFormats as unknown as typeof ajvFormats.default)(ajv);
ajv.addSchema(loadRenderReference(), 'render');
const renderDisk = ajv.getSchema('render#/components/schemas/diskWithCursor/properties/disk')!;

let server: TestServer;
let api: Client;
let owner: TestUser, viewer: TestUser, stranger: TestUser;
beforeAll(async () => {
  server = await bootServer({ SLIPWAY_DISK_CHECK_MS: '300' });
  api = client(server.url);
  owner = await signUp(api);
  viewer = await addMember(api, owner, 'viewer');
  stranger = await signUp(api);
}, 60_000);
afterAll(() => server?.close());

const app = (slug: string, url: string) =>
  viaRouter(server.slipway.routerPort, slug, url).then((r) => {
    expect(r.status, r.text).toBe(200);
    return r.json() as Record<string, unknown>;
  });
const dataApp = (name: string) =>
  deployFixture(api, owner, 'disk-app', { name, envVars: [{ key: 'DATA_DIR', value: '/var/data' }] });
/** Until the service's live instance answers (a restart or restore rolls it over). */
const serving = (slug: string) =>
  waitFor(`${slug} serving`, async () => (await viaRouter(server.slipway.routerPort, slug, '/healthz')).status === 200);

describe('disks', () => {
  it('keep their files across deploys and a Slipway restart, cap writes at their size, and restore a snapshot', async () => {
    const { service } = await dataApp('notes');
    const body = { name: 'data', sizeGB: 1, mountPath: '/var/data', serviceId: service.id };
    expect((await api.post('/v1/disks', body, viewer)).status).toBe(403);
    expect((await api.post('/v1/disks', body, stranger)).status).toBe(404);
    for (const [field, value] of [
      ['mountPath', '/etc/data'],
      ['mountPath', 'relative'],
      ['mountPath', '/var/../etc'],
      ['mountPath', '/var/da:ta'], // a container engine's bind syntax splits on ':'
      ['sizeGB', 0],
      ['sizeGB', 51], // past SLIPWAY_DISK_MAX_GB (50): one tenant's share of the host's disk
    ] as const) {
      const bad = await api.post('/v1/disks', { ...body, [field]: value }, owner);
      expect(bad.status, `${field}=${value}: ${bad.text}`).toBe(400);
    }
    const created = await api.post('/v1/disks', body, owner);
    expect(created.status, created.text).toBe(201);
    expect(renderDisk(created.body), JSON.stringify(renderDisk.errors)).toBe(true);
    expect(created.body).toMatchObject({ name: 'data', sizeGB: 1, mountPath: '/var/data', serviceId: service.id });
    const disk = `/v1/disks/${created.body.id}`;
    expect((await api.post('/v1/disks', body, owner)).status).toBe(409); // one per service
    expect((await api.get(disk, stranger)).status).toBe(404);
    expect((await api.get(`/v1/disks?ownerId=${owner.workspaceId}&serviceId=${service.id}`, viewer)).body).toEqual([
      { cursor: expect.any(String), disk: created.body },
    ]);

    // The instance restarted with the disk at /var/data: what it writes there is kept.
    await serving(service.slug);
    expect(await app(service.slug, '/put?name=a.txt&content=first')).toEqual({ ok: true });
    const redeploy = await api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    await finished(api, owner, service.id, redeploy.body.id);
    expect(await app(service.slug, '/get?name=a.txt')).toEqual({ content: 'first' });
    // One instance: scaling out is refused while it has a disk.
    const scaled = await api.patch(`/v1/services/${service.id}`, { serviceDetails: { numInstances: 2 } }, owner);
    expect(scaled.status, scaled.text).toBe(409);

    // A write past 1 GB fails inside the app (ENOSPC), and the disk is usable again after.
    const fill = await app(service.slug, '/fill?mb=1100');
    expect(fill.error).toBe('ENOSPC');
    expect(fill.written as number).toBeLessThan(1024 * 1024 * 1024);
    expect(fill.written as number).toBeGreaterThan(900 * 1024 * 1024);

    // A snapshot, a change, then the snapshot restored: the older state is back.
    const snap = await api.post(`${disk}/snapshots`, {}, owner);
    expect(snap.status, snap.text).toBe(201);
    expect(await app(service.slug, '/put?name=a.txt&content=second')).toEqual({ ok: true });
    const listed = (await api.get(`${disk}/snapshots`, viewer)).body as Array<{ snapshotKey: string; kind: string }>;
    expect(listed.map((s) => s.snapshotKey)).toContain(snap.body.snapshotKey);
    // The disk loop took its first daily one on its own.
    expect(listed.map((s) => s.kind)).toContain('daily');
    expect((await api.post(`${disk}/snapshots/restore`, { snapshotKey: 'snp-nope' }, owner)).status).toBe(404);
    const restored = await api.post(`${disk}/snapshots/restore`, { snapshotKey: snap.body.snapshotKey }, owner);
    expect(restored.status, restored.text).toBe(200);
    await serving(service.slug);
    expect(await app(service.slug, '/get?name=a.txt')).toEqual({ content: 'first' });
    // A client repeating the request keeps the newest 3 snapshots it asked for, not one per request.
    for (let i = 0; i < 4; i++) expect((await api.post(`${disk}/snapshots`, {}, owner)).status).toBe(201);
    const manual = ((await api.get(`${disk}/snapshots`, owner)).body as Array<{ kind: string }>).filter(
      (s) => s.kind === 'manual',
    );
    expect(manual).toHaveLength(3);

    // Slipway restarts (its apps keep running), then deploys again: the files are still there.
    await server.stop();
    server = await bootServer(
      { SLIPWAY_DISK_CHECK_MS: '300' },
      { dataDir: server.dataDir, databaseUrl: server.databaseUrl },
    );
    api = client(server.url);
    const again = await api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    await finished(api, owner, service.id, again.body.id);
    expect(await app(service.slug, '/get?name=a.txt')).toEqual({ content: 'first' });

    // It grows, never shrinks.
    expect((await api.patch(disk, { sizeGB: 0 }, owner)).status).toBe(400);
    const grown = await api.patch(disk, { sizeGB: 2 }, owner);
    expect(grown.status, grown.text).toBe(200);
    await serving(service.slug);
    expect(statSync(`${server.dataDir}/services/${service.id}/disk.img`).size).toBe(2 * 1024 ** 3);
    expect(await app(service.slug, '/get?name=a.txt')).toEqual({ content: 'first' });

    // Deleted: its files go, and the service runs on without it.
    expect((await api.delete(disk, owner)).status).toBe(204);
    await serving(service.slug);
    expect(await app(service.slug, '/get?name=a.txt')).toEqual({ error: 'ENOENT' });
    expect(existsSync(`${server.dataDir}/services/${service.id}/disk.img`)).toBe(false);
  }, 300_000);

  it("comes from a blueprint's disk, mounted where the file says", async () => {
    const yaml = (size: number) =>
      [
        'services:',
        '  - type: web',
        '    name: bp-notes',
        '    runtime: node',
        '    startCommand: node disk-server.js',
        '    envVars: [{key: DATA_DIR, value: /srv/notes}]',
        `    disk: {name: notes, mountPath: /srv/notes, sizeGB: ${size}}`,
      ].join('\n');
    const server = readFileSync(path.join(FIXTURES, 'disk-app/server.js'), 'utf8');
    const created = await createUploaded(api, owner, 'with-disk', yaml(1), { 'disk-server.js': server });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const sync = await syncEnded(api, owner, created.body.blueprint.id, created.body.sync.id, 120_000);
    expect(sync.state, JSON.stringify(sync)).toBe('success');
    await allDeploysSettled(api, owner);
    const service = (await servicesByName(api, owner)).get('bp-notes');
    const [disk] = (await api.get(`/v1/disks?ownerId=${owner.workspaceId}&serviceId=${service.id}`, owner)).body;
    expect(disk.disk).toMatchObject({ name: 'notes', sizeGB: 1, mountPath: '/srv/notes' });
    await serving(service.slug);
    expect(await app(service.slug, '/put?name=n.txt&content=kept')).toEqual({ ok: true });
  }, 180_000);

  it('is seen by no other service, of the workspace or another', async () => {
    const { service } = await dataApp('keeper');
    const created = await api.post(
      '/v1/disks',
      { name: 'secret', sizeGB: 1, mountPath: '/var/data', serviceId: service.id },
      owner,
    );
    expect(created.status, created.text).toBe(201);
    await serving(service.slug);
    expect(await app(service.slug, '/put?name=s.txt&content=mine')).toEqual({ ok: true });
    const sibling = await dataApp('sibling');
    const outsider = await deployFixture(api, stranger, 'disk-app', {
      envVars: [{ key: 'DATA_DIR', value: '/var/data' }],
    });
    for (const other of [sibling.service, outsider.service])
      expect(await app(other.slug, '/get?name=s.txt')).toEqual({ error: 'ENOENT' });
    // Nor through the API.
    expect((await api.get(`/v1/disks/${created.body.id}/snapshots`, stranger)).status).toBe(404);
    expect((await api.get('/v1/disks', stranger)).body).toEqual([]);

    // Deleting the service unmounts its disk and removes it with the service.
    expect((await api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
    expect((await api.get(`/v1/disks/${created.body.id}`, owner)).status).toBe(404);
    await waitFor('its disk unmounted', async () => !readFileSync('/proc/self/mountinfo', 'utf8').includes(service.id));
  }, 180_000);
});

describe("a disk's runtime", () => {
  it('says that none runs when a restart of a service with a disk fails (its old instance stopped first)', async () => {
    const { service } = await dataApp('fragile');
    const disk = { name: 'data', sizeGB: 1, mountPath: '/var/data', serviceId: service.id };
    expect((await api.post('/v1/disks', disk, owner)).status).toBe(201);
    await serving(service.slug);
    expect(await app(service.slug, '/put?name=fail-next-start&content=1')).toEqual({ ok: true });
    const restart = await api.post(`/v1/services/${service.id}/restart`, {}, owner);
    expect(restart.status, restart.text).toBe(409);
    expect(restart.body.message).toMatch(/none is running: a service with a disk stops its old instance first/);
  }, 120_000);

  it('mounts a disk once when its instance starts and the daily snapshot come together', async () => {
    const tools = detectDiskTools();
    if (typeof tools === 'string') throw new Error(tools);
    const disks = createServiceDisks(tools, undefined);
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-disk-race-'));
    const place = { image: path.join(dir, 'disk.img'), dir: path.join(dir, 'disk'), sizeMb: 64 };
    try {
      // Both make the image and mount it unless one waits for the other (before: a rename of the image failed).
      await Promise.all([disks.mount(place), disks.mount(place), disks.snapshot(place, path.join(dir, 's.img'))]);
      expect(readFileSync('/proc/self/mountinfo', 'utf8').split(` ${place.dir} `).length - 1).toBe(1);
      expect(await disks.snapshot(place, path.join(dir, 's.img'))).toBeGreaterThan(0);
    } finally {
      await disks.remove(place);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
