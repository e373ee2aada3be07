/**
 * Docker and image services on Podman (docs/containers.md): built from a Dockerfile in a build namespace, pulled from a
 * real registry with a credential, run in the instance's namespace under its cgroup, and judged as native instances are.
 * The base image is made from this machine's files (test/helpers/containers.ts); nothing comes from the internet.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storageOf } from '../src/runtime/containers/engine.js';
import { deployFixture, finished, keepRequesting, packFixture, upload, probeVia, viaRouter } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { hasContainerEngine, startRegistry, type TestRegistry } from './helpers/containers.js';
import { hostAddresses, namespaceAddress } from './helpers/network.js';
import { freshStore, spawnSlipway, type SlipwayProcess } from './helpers/process.js';
import { killProcessesUnder, unmountUnder, useServer } from './helpers/server.js';
import { freePort, waitFor } from './helpers/wait.js';

const host = hostAddresses()[0]!;
const registryPort = 21000 + Math.floor(Math.random() * 20000);
const registryAddress = `${host}:${registryPort}`;
/** A second registry, which asks for a user (an image service's registry credential). */
const privatePort = 21000 + Math.floor(Math.random() * 20000);
const privateAddress = `${host}:${privatePort}`;
const robot = { name: 'robot', password: 'pull-secret-123' };

/** Waits for a deploy to end, and says why when it did not go live. */
async function expectLive(api: Client, as: TestUser, serviceId: string, deployId: string, timeoutMs: number) {
  const deploy = await finished(api, as, serviceId, deployId, timeoutMs);
  expect(deploy.status, deploy.failureReason).toBe('live');
  return deploy;
}

/** The fixture app with a Dockerfile: a dependency layer (package.json), then the source, a build arg, dockerCommand-able. */
const dockerfile = (base: string, extra = '') => `FROM ${base}
WORKDIR /app
COPY package.json ./
RUN echo "installed at $(date +%s%N)" > /app/deps.txt
COPY . .
ARG GREETING=unset
RUN echo "$GREETING" > /app/greeting.txt
${extra}
CMD ["node", "server.js"]
`;

describe.skipIf(!hasContainerEngine)('containers (Podman)', () => {
  const t = useServer({
    SLIPWAY_EGRESS_ALLOW: `${host}/32`,
    SLIPWAY_CONTAINER_INSECURE_REGISTRIES: `${registryAddress},${privateAddress}`,
    // A /tmp the disk probe fills in a moment.
    SLIPWAY_DISK_LIMIT_MB: '64',
    // A process limit the fork probe reaches in a moment.
    SLIPWAY_PIDS_LIMIT: '128',
    // A container disk (images and roots) the root-fill probe reaches in a moment.
    SLIPWAY_CONTAINER_DISK_MB: '512',
  });
  let registry: TestRegistry;
  let privateRegistry: TestRegistry;
  let base: string;
  let owner: TestUser;
  let api: Client;
  beforeAll(async () => {
    registry = await startRegistry(host, undefined, registryPort);
    base = registry.pushBase('base/node:20');
    privateRegistry = await startRegistry(host, robot, privatePort);
    api = t.api;
    owner = await signUp(api);
  }, 180_000);
  afterAll(async () => {
    await registry?.close();
    await privateRegistry?.close();
  });

  async function dockerService(
    files: Record<string, string>,
    details: Record<string, unknown> = {},
    fixture = 'node-web',
    as = owner,
  ) {
    const created = await api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: `docker-${Math.random().toString(36).slice(2, 8)}`,
        serviceDetails: { runtime: 'docker', ...details },
        envVars: [{ key: 'GREETING', value: 'hello from a build arg' }],
      },
      as,
    );
    expect(created.status, created.text).toBe(201);
    const service = created.body.service as { id: string; slug: string };
    const up = await upload(api, as, service.id, await packFixture(fixture, files));
    expect(up.status, up.text).toBe(201);
    return { service, deployId: up.body.deployId as string };
  }

  /** The first line of the app's /proc/self/uid_map: [id inside, host id, count] (docs/containers.md, "Users"). */
  async function uidMapOf(slug: string): Promise<number[]> {
    const read = await viaRouter(t.server.slipway.routerPort, slug, '/read?/proc/self/uid_map');
    return (JSON.parse(read.text) as { content: string }).content.trim().split(/\s+/).map(Number);
  }

  it('builds a Dockerfile from an uploaded archive and serves it through the router, as root remapped to nobody on the host', async () => {
    const { service, deployId } = await dockerService(
      { Dockerfile: dockerfile(base, 'RUN echo "resolver: $(grep -m1 nameserver /etc/resolv.conf)"') },
      { healthCheckPath: '/healthz' },
    );
    const deploy = await finished(api, owner, service.id, deployId, 180_000);
    // RUN steps (and pulls) resolve names with the build namespace's resolver (slirp4netns's), not the host's.
    const buildLog = await api.get(`/v1/logs?resource=${service.id}&type=build&limit=100`, owner);
    expect(JSON.stringify(buildLog.body)).toMatch(/resolver: nameserver 10\.0\.2\.3/);
    expect(deploy.status, deploy.failureReason).toBe('live');
    const reply = await viaRouter(t.server.slipway.routerPort, service.slug);
    expect(reply.status).toBe(200);
    const body = JSON.parse(reply.text) as { uid: number; env: Record<string, string> };
    // No USER in the image: it runs as its root, in a user namespace of its own whose ids are no host user's.
    expect(body.uid).toBe(0);
    const [inside, hostBase, count] = await uidMapOf(service.slug);
    expect(inside).toBe(0);
    expect(hostBase).toBeGreaterThanOrEqual(2 ** 31);
    expect(count).toBe(65_536);
    expect(body.env.PORT).toBe('10000');
    expect(body.env.GREETING).toBe('hello from a build arg');
    const read = await viaRouter(t.server.slipway.routerPort, service.slug, '/read?greeting.txt');
    expect(JSON.parse(read.text)).toMatchObject({ read: true, content: 'hello from a build arg\n' });
    expect((await api.get('/status')).body.containers.engine).toMatch(/^podman \d+\.\d+/);
    const got = await api.get(`/v1/services/${service.id}`, owner);
    expect(got.body.serviceDetails.envSpecificDetails).toMatchObject({
      dockerfilePath: './Dockerfile',
      dockerContext: '.',
      dockerCommand: '',
    });
  }, 240_000);

  it("runs an image's USER as that user, and lets a root image drop to its own user only inside its namespace", async () => {
    const [withUser, dropping] = await Promise.all([
      dockerService({ Dockerfile: dockerfile(base, 'USER nobody') }, { healthCheckPath: '/healthz' }),
      // As nginx's master does: starts as root, then becomes its worker user (setuid, setgid), which needs the
      // capabilities root keeps in its own namespace.
      dockerService(
        { Dockerfile: dockerfile(base) },
        {
          healthCheckPath: '/healthz',
          envSpecificDetails: { dockerCommand: 'su nobody -s /bin/sh -c "exec node server.js"' },
        },
      ),
    ]);
    for (const { service, deployId } of [withUser, dropping]) {
      await expectLive(api, owner, service.id, deployId, 180_000);
      const body = JSON.parse((await viaRouter(t.server.slipway.routerPort, service.slug)).text) as { uid: number };
      expect(body.uid).toBe(65534);
      const [, hostBase] = await uidMapOf(service.slug);
      expect(hostBase).toBeGreaterThanOrEqual(2 ** 31);
      // On the host, the app is an id of the service's range, not nobody nor root.
      const owners = readdirSync('/proc')
        .filter((pid) => /^\d+$/.test(pid))
        .flatMap((pid) => {
          try {
            const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
            const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
            return cmd.includes('server.js') && uid ? [Number(uid)] : [];
          } catch {
            return [];
          }
        });
      expect(owners).toContain(hostBase! + 65534);
    }
  }, 400_000);

  /** What a tenant's prober app (net-prober, in a container) answers to `what` (docs/containers.md, "Isolation"). */
  const probe = (slug: string, what: string, q: Record<string, string | number>) =>
    probeVia(t.server.slipway.routerPort, slug, what, q);

  it('builds a multi-stage Dockerfile, runs dockerCommand, reuses the dependency layers, and rolls back to the same image', async () => {
    const multiStage = `FROM ${base} AS build
RUN mkdir -p /out && echo "built in stage one" > /out/built.txt
${dockerfile(base, 'COPY --from=build /out/built.txt /app/built.txt')}`;
    const files = { Dockerfile: multiStage, VERSION: 'v1' };
    const details = { envSpecificDetails: { dockerCommand: 'GREETING=from-docker-command exec node server.js' } };
    const first = await dockerService(files, details);
    const v1 = await finished(api, owner, first.service.id, first.deployId, 180_000);
    expect(v1.status, v1.failureReason).toBe('live');
    const slug = first.service.slug;
    const served = async () => JSON.parse((await viaRouter(t.server.slipway.routerPort, slug)).text);
    const read = async (file: string) =>
      JSON.parse((await viaRouter(t.server.slipway.routerPort, slug, `/read?${file}`)).text).content as string;
    expect(await served()).toMatchObject({ version: 'v1', env: { GREETING: 'from-docker-command' } });
    expect(await read('built.txt')).toBe('built in stage one\n');
    const depsBefore = await read('deps.txt');

    // A source change: the layers before COPY . . come from the cache (the same deps.txt, stamped when first built).
    const up = await upload(api, owner, first.service.id, await packFixture('node-web', { ...files, VERSION: 'v2' }));
    const v2 = await finished(api, owner, first.service.id, up.body.deployId, 180_000);
    expect(v2.status, v2.failureReason).toBe('live');
    expect(await served()).toMatchObject({ version: 'v2' });
    expect(await read('deps.txt')).toBe(depsBefore);
    const logs = await api.get(`/v1/logs?resource=${first.service.id}&type=build&limit=100`, owner);
    expect(JSON.stringify(logs.body)).toMatch(/Using cache/);

    const rollback = await api.post(`/v1/services/${first.service.id}/rollback`, { deployId: first.deployId }, owner);
    expect(rollback.status, rollback.text).toBe(201);
    const back = await finished(api, owner, first.service.id, rollback.body.id, 120_000);
    expect(back.status, back.failureReason).toBe('live');
    expect(await served()).toMatchObject({ version: 'v1', env: { GREETING: 'from-docker-command' } });
  }, 400_000);

  it('runs preDeployCommand in the new image: when it fails, the deploy fails and the old one keeps serving', async () => {
    const files = { Dockerfile: dockerfile(base), VERSION: 'v1' };
    const first = await dockerService(files, { preDeployCommand: 'test -f /app/VERSION && echo migrated' });
    await expectLive(api, owner, first.service.id, first.deployId, 180_000);
    const patched = await api.patch(
      `/v1/services/${first.service.id}`,
      { serviceDetails: { preDeployCommand: 'echo "migration failed" >&2; exit 3' } },
      owner,
    );
    expect(patched.status, patched.text).toBe(200);
    const up = await upload(api, owner, first.service.id, await packFixture('node-web', { ...files, VERSION: 'v2' }));
    const failed = await finished(api, owner, first.service.id, up.body.deployId, 180_000);
    expect(failed.status).toBe('pre_deploy_failed');
    expect(failed.failureReason).toMatch(/exited with 3[\s\S]*migration failed/);
    const reply = await viaRouter(t.server.slipway.routerPort, first.service.slug);
    expect(JSON.parse(reply.text)).toMatchObject({ version: 'v1' });
  }, 400_000);

  it("keeps a container to its workspace's network: not another workspace's, not the host, not Slipway", async () => {
    const other = await signUp(api);
    const theirs = await deployFixture(api, other, 'node-web', { type: 'private_service' });
    expect(theirs.deploy.status).toBe('live');
    const mine = await deployFixture(api, owner, 'node-web', { type: 'private_service' });
    const prober = await dockerService({ Dockerfile: dockerfile(base) }, {}, 'net-prober');
    await expectLive(api, owner, prober.service.id, prober.deployId, 180_000);
    const slug = prober.service.slug;
    const instanceOf = async (as: TestUser, id: string) =>
      ((await api.get(`/v1/services/${id}/instances`, as)).body as { id: string }[])[0]!.id;
    expect(await probe(slug, 'connect', { host: mine.service.slug, port: 10000 })).toEqual({ ok: true });
    const theirAddress = namespaceAddress(await instanceOf(other, theirs.service.id))!;
    expect(await probe(slug, 'connect', { host: theirAddress, port: 10000 })).toMatchObject({ ok: false });
    expect((await probe(slug, 'resolve', { name: theirs.service.slug })).ok).toBe(false);
    const myAddress = namespaceAddress(await instanceOf(owner, prober.service.id))!;
    const gateway = myAddress.replace(/\.\d+$/, '.1');
    const apiPort = Number(new URL(t.server.url).port);
    for (const to of ['127.0.0.1', '10.0.2.2', gateway, host])
      for (const port of [apiPort, t.server.slipway.routerPort])
        expect(await probe(slug, 'connect', { host: to, port }), `${to}:${port}`).toMatchObject({ ok: false });
    const listening: string[] = await probe(slug, 'listening', {});
    expect(listening.map((l) => parseInt(l.split(':')[1]!, 16))).toEqual([10000]);
  }, 400_000);

  it("holds a container to its plan: processes, /tmp and its image's volumes, the seccomp filter", async () => {
    const { service, deployId } = await dockerService(
      { Dockerfile: dockerfile(base, 'VOLUME /data') },
      { plan: 'free', healthCheckPath: '/health' },
      'limits-probe',
    );
    const deployed = await finished(api, owner, service.id, deployId, 180_000);
    expect(deployed.status, deployed.failureReason).toBe('live');
    const ask = async (what: string) =>
      JSON.parse((await viaRouter(t.server.slipway.routerPort, service.slug, what, { timeoutMs: 30_000 })).text);
    const fork = await ask('/fork?max=256');
    expect(fork.code).toBe('EAGAIN');
    expect(fork.spawned).toBeLessThan(128);
    await ask('/release');
    const fill = await ask('/fill?dir=tmp');
    expect(fill.code).toBe('ENOSPC');
    expect(fill.bytes).toBeLessThanOrEqual(64 * 1024 * 1024);
    // An image's VOLUME is a tmpfs of the same size, not an anonymous volume on the host's disk.
    const volume = await ask('/fill?dir=volume');
    expect(volume.code).toBe('ENOSPC');
    expect(volume.bytes).toBeLessThanOrEqual(64 * 1024 * 1024);
    const syscalls = await ask('/syscalls');
    expect(syscalls.seccomp).toBe('2');
    expect(syscalls.userns.status).not.toBe(0);
    // Its root is writable, as on Render, up to its service's container disk (images and roots together).
    const root = await ask(`/fill?dir=root&max=${1024 * 1024 * 1024}`);
    expect(root.code).toBe('ENOSPC');
    expect(root.bytes).toBeLessThan(512 * 1024 * 1024);
    expect(root.fsBytes).toBeLessThanOrEqual(512 * 1024 * 1024);

    // Deleting the service unmounts its disk and removes its files.
    const storage = path.join(t.server.dataDir, 'services', service.id, 'containers');
    expect(readFileSync('/proc/self/mounts', 'utf8')).toContain(` ${storage} `);
    expect((await api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
    await waitFor(
      'the service disk unmounted and its files gone',
      async () =>
        !readFileSync('/proc/self/mounts', 'utf8').includes(` ${storage} `) && !existsSync(path.dirname(storage)),
    );
  }, 400_000);

  it('deploys an image service from a private registry with a credential, and rolls back to the same digest', async () => {
    // An image of the app, built from the base (as a team's CI would push it).
    const pushed = privateRegistry.pushApp('apps/web:latest', base, 'v1');
    const wrong = await api.post(
      '/v1/registrycredentials',
      { registry: 'DOCKER', name: 'wrong', username: robot.name, authToken: 'not-the-token' },
      owner,
    );
    const right = await api.post(
      '/v1/registrycredentials',
      { registry: 'DOCKER', name: 'robot', username: robot.name, authToken: robot.password },
      owner,
    );
    expect([wrong.status, right.status]).toEqual([200, 200]);
    const created = await api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: `image-${Math.random().toString(36).slice(2, 8)}`,
        serviceDetails: { runtime: 'image', healthCheckPath: '/healthz' },
        image: { ownerId: owner.workspaceId, imagePath: pushed, registryCredentialId: wrong.body.id },
      },
      owner,
    );
    expect(created.status, created.text).toBe(201);
    const service = created.body.service as { id: string; slug: string };
    expect(created.body.service.imagePath).toBe(pushed);
    const refused = await finished(api, owner, service.id, created.body.deployId, 120_000);
    expect(refused.status).toBe('build_failed');
    expect(refused.failureReason).toMatch(/unauthorized|authentication required/i);
    expect(JSON.stringify(refused)).not.toContain('not-the-token');

    const fixed = await api.patch(
      `/v1/services/${service.id}`,
      { image: { imagePath: pushed, registryCredentialId: right.body.id } },
      owner,
    );
    expect(fixed.status, fixed.text).toBe(200);
    const first = await api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    const v1 = await finished(api, owner, service.id, first.body.id, 120_000);
    expect(v1.status, v1.failureReason).toBe('live');
    const served = async () => JSON.parse((await viaRouter(t.server.slipway.routerPort, service.slug)).text);
    expect(await served()).toMatchObject({ version: 'v1' });

    // The tag moves on; a new deploy pulls v2; a rollback runs the digest v1 resolved to, not the tag.
    privateRegistry.pushApp('apps/web:latest', base, 'v2');
    const second = await api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    await expectLive(api, owner, service.id, second.body.id, 120_000);
    expect(await served()).toMatchObject({ version: 'v2' });
    const rollback = await api.post(`/v1/services/${service.id}/rollback`, { deployId: first.body.id }, owner);
    await expectLive(api, owner, service.id, rollback.body.id, 120_000);
    expect(await served()).toMatchObject({ version: 'v1' });
    expect((await api.delete(`/v1/registrycredentials/${right.body.id}`, owner)).status).toBe(409);

    // Render's preview: the same image at another tag, named by the end of its path, as a service of its own.
    privateRegistry.pushApp('apps/web:v3', base, 'v3');
    const elsewhere = await api.post(`/v1/services/${service.id}/preview`, { imagePath: 'other/web:v3' }, owner);
    expect(elsewhere.status, elsewhere.text).toBe(400);
    const preview = await api.post(`/v1/services/${service.id}/preview`, { imagePath: 'web:v3' }, owner);
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.service).toMatchObject({
      imagePath: pushed.replace(/:latest$/, ':v3'),
      serviceDetails: { parentServer: { id: service.id } },
      registryCredential: { id: right.body.id },
    });
    const previewed = await finished(api, owner, preview.body.service.id, preview.body.deployId, 120_000);
    expect(previewed.status, previewed.failureReason).toBe('live');
    const fromPreview = await viaRouter(t.server.slipway.routerPort, preview.body.service.slug);
    expect(JSON.parse(fromPreview.text)).toMatchObject({ version: 'v3' });
    expect(await served()).toMatchObject({ version: 'v1' });
  }, 400_000);

  it('rolls over 10 times under load without a failed request', async () => {
    const { service, deployId } = await dockerService(
      { Dockerfile: dockerfile(base) },
      { healthCheckPath: '/healthz' },
    );
    await expectLive(api, owner, service.id, deployId, 180_000);
    const load = keepRequesting([() => viaRouter(t.server.slipway.routerPort, service.slug)]);
    try {
      for (let i = 0; i < 10; i++) {
        const restart = await api.post(`/v1/services/${service.id}/restart`, {}, owner);
        expect(restart.status, restart.text).toBeLessThan(300);
        await waitFor(
          `restart ${i + 1} to finish`,
          async () => (await api.get(`/v1/services/${service.id}/instances`, owner)).body.length === 1,
          60_000,
        );
      }
    } finally {
      await load.stop();
    }
    expect(load.failures).toEqual([]);
    expect(load.served()).toBeGreaterThan(20);
  }, 400_000);

  it('mounts secret files read-only at /etc/secrets in a container, its pre-deploy run and its one-off jobs', async () => {
    const { service, deployId } = await dockerService({ Dockerfile: dockerfile(base) });
    await expectLive(api, owner, service.id, deployId, 180_000);
    const group = await api.post(
      '/v1/env-groups',
      { name: `files-${service.id}`, envVars: [], serviceIds: [service.id] },
      owner,
    );
    await api.put(`/v1/env-groups/${group.body.id}/secret-files/shared.txt`, { content: 'from the group' }, owner);
    await api.put(`/v1/services/${service.id}/secret-files/config.json`, { content: '{"db":"s3cret"}' }, owner);
    // The pre-deploy run fails the deploy unless it reads the file.
    const preDeployCommand = 'grep -q s3cret /etc/secrets/config.json';
    expect(
      (await api.patch(`/v1/services/${service.id}`, { serviceDetails: { preDeployCommand } }, owner)).status,
    ).toBe(200);
    const redeploy = await api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    expect(redeploy.status, redeploy.text).toBe(201);
    await expectLive(api, owner, service.id, redeploy.body.id, 180_000);
    const read = async (file: string) =>
      JSON.parse((await viaRouter(t.server.slipway.routerPort, service.slug, `/read?/etc/secrets/${file}`)).text);
    expect(await read('config.json')).toEqual({ read: true, content: '{"db":"s3cret"}' });
    expect(await read('shared.txt')).toEqual({ read: true, content: 'from the group' });

    // A one-off job runs in the live deploy's image, with its secret files: its exit status and output are the job's.
    const jobs = `/v1/services/${service.id}/jobs`;
    const job = await api.post(jobs, { startCommand: 'grep -c s3cret /etc/secrets/config.json; exit 7' }, owner);
    expect(job.status, job.text).toBe(201);
    const ended = await waitFor(
      'the job in the image to end',
      async () => {
        const j = (await api.get(`${jobs}/${job.body.id}`, owner)).body;
        return ['succeeded', 'failed', 'canceled'].includes(j.status) && j;
      },
      60_000,
      200,
    );
    expect(ended, JSON.stringify(ended)).toMatchObject({ status: 'failed', exitCode: 7 });
    const logs = await api.get(`/v1/logs?resource=${service.id}&instance=${job.body.id}&direction=forward`, owner);
    expect(logs.body.logs.map((l: { message: string }) => l.message)).toContain('1');
  }, 400_000);

  it("binds its service's disk at its mountPath: what the container writes there outlives a deploy", async () => {
    const { service, deployId } = await dockerService(
      { Dockerfile: dockerfile(base, 'USER nobody') },
      { healthCheckPath: '/healthz' },
      'disk-app',
    );
    await finished(api, owner, service.id, deployId);
    const disk = { name: 'data', sizeGB: 1, mountPath: '/var/data', serviceId: service.id };
    const created = await api.post('/v1/disks', disk, owner);
    expect(created.status, created.text).toBe(201);
    const app = async (what: string) =>
      JSON.parse((await viaRouter(t.server.slipway.routerPort, service.slug, what, { timeoutMs: 30_000 })).text);
    // Restarted with the disk: its user (nobody, as the image says) writes there; a new deploy's container reads it.
    await waitFor('the container with its disk', async () => (await app('/put?name=a.txt&content=kept')).ok === true);
    const first = (await app('/boot')).boot as string;
    const redeploy = await api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    await finished(api, owner, service.id, redeploy.body.id);
    expect((await app('/boot')).boot).not.toBe(first);
    expect(await app('/get?name=a.txt')).toEqual({ content: 'kept' });
    // Bounded by its size, as a native service's disk is.
    expect((await app('/fill?mb=1200')).error).toBe('ENOSPC');
  }, 300_000);

  it("garbage-collects a discarded deploy's image, keeps the live and the kept ones, and rolls back to a kept one", async () => {
    // GC keeps the newest `keepArtifacts` deploys, the live one among them: one deploy more discards the first. The
    // last builds the first's source again, so the cache gives it the first's very image, which must keep running.
    const keep = t.server.config.keepArtifacts;
    const files = { Dockerfile: dockerfile(base), VERSION: 'v1' };
    const first = await dockerService(files, { healthCheckPath: '/healthz' });
    const { id: serviceId, slug } = first.service;
    await expectLive(api, owner, serviceId, first.deployId, 180_000);
    const deployIds = [first.deployId];
    for (const version of [...Array.from({ length: keep - 1 }, (_, i) => `v${i + 2}`), 'v1']) {
      const up = await upload(api, owner, serviceId, await packFixture('node-web', { ...files, VERSION: version }));
      expect(up.status, up.text).toBe(201);
      await expectLive(api, owner, serviceId, up.body.deployId, 180_000);
      deployIds.push(up.body.deployId);
    }
    const [discarded, ...kept] = deployIds as [string, ...string[]];
    const { rows } = await t.server.slipway.store.executeSql('select id, toolchain from deploys where id = any($1)', [
      [discarded, kept.at(-1)],
    ]);
    const imageIds = new Set(rows.map((r: { toolchain: { image: { id: string } } }) => r.toolchain.image.id));
    expect(imageIds.size).toBe(1);

    // The tags in the service's storage, read as Slipway's engine reads it (podman.ts's storage flags).
    const storage = storageOf(path.join(t.server.dataDir, 'services', serviceId, 'containers'));
    const tags = () =>
      execFileSync('podman', [
        ...['--root', storage.root, '--runroot', storage.runRoot],
        ...['--storage-driver', 'overlay', '--storage-opt', 'overlay.skip_mount_home=true'],
        ...['images', '--format', '{{.Repository}}:{{.Tag}}'],
      ])
        .toString()
        .split('\n');
    const tagOf = (deployId: string) => `localhost/slipway/${serviceId}:${deployId}`;
    await waitFor("the discarded deploy's image to go", async () => !tags().includes(tagOf(discarded)), 60_000);
    expect(tags()).toEqual(expect.arrayContaining(kept.map(tagOf)));
    const served = async () => JSON.parse((await viaRouter(t.server.slipway.routerPort, slug)).text);
    expect(await served()).toMatchObject({ version: 'v1' });

    const gone = await api.post(`/v1/services/${serviceId}/rollback`, { deployId: discarded }, owner);
    expect(gone.status, gone.text).toBe(409);
    const rollback = await api.post(`/v1/services/${serviceId}/rollback`, { deployId: kept[0] }, owner);
    expect(rollback.status, rollback.text).toBe(201);
    await expectLive(api, owner, serviceId, rollback.body.id, 120_000);
    expect(await served()).toMatchObject({ version: 'v2' });
  }, 600_000);
});

describe.skipIf(!hasContainerEngine)('containers across a kill -9 of Slipway', () => {
  let store: Awaited<ReturnType<typeof freshStore>> | undefined;
  let proc: SlipwayProcess | undefined;
  let registry: TestRegistry | undefined;
  afterAll(async () => {
    await proc?.kill();
    await registry?.close();
    if (store) {
      killProcessesUnder(store.dataDir);
      unmountUnder(store.dataDir);
      await store.remove();
    }
  });

  it('keeps a container serving while Slipway is down, and adopts it on restart', async () => {
    const port = 21000 + Math.floor(Math.random() * 20000);
    registry = await startRegistry(host, undefined, port);
    const base = registry.pushBase('base/node:20');
    store = await freshStore();
    const routerPort = await freePort();
    const env = {
      ...store.env,
      SLIPWAY_PORT: String(await freePort()),
      SLIPWAY_ROUTER_PORT: String(routerPort),
      SLIPWAY_EGRESS_ALLOW: `${host}/32`,
      SLIPWAY_CONTAINER_INSECURE_REGISTRIES: `${host}:${port}`,
    };
    proc = spawnSlipway(env);
    const url = /"url":"([^"]+)"/.exec(await proc.waitForOutput(/"msg":"slipway is up"/, 30_000))![1]!;
    const api = client(url);
    const owner = await signUp(api);
    const created = await api.post(
      '/v1/services',
      { type: 'web_service', name: 'adopted', serviceDetails: { runtime: 'docker', healthCheckPath: '/healthz' } },
      owner,
    );
    const service = created.body.service as { id: string; slug: string };
    const up = await upload(api, owner, service.id, await packFixture('node-web', { Dockerfile: dockerfile(base) }));
    await expectLive(api, owner, service.id, up.body.deployId, 180_000);
    const before = JSON.parse((await viaRouter(routerPort, service.slug)).text);

    proc.child.kill('SIGKILL');
    await proc.exited;
    // The router outlives Slipway (its own process), and the container outlives both.
    expect(JSON.parse((await viaRouter(routerPort, service.slug)).text)).toMatchObject({ boot: before.boot });
    proc = spawnSlipway(env);
    // 60 s, as the other restarts under CI's load: one CI rehearsal printed nothing for 25 s after "Server listening".
    await proc.waitForOutput(/"msg":"slipway is up"/, 60_000);
    const after = JSON.parse((await viaRouter(routerPort, service.slug)).text);
    expect(after).toMatchObject({ boot: before.boot }); // adopted, not restarted
    const restart = await api.post(`/v1/services/${service.id}/restart`, {}, owner);
    expect(restart.status, restart.text).toBeLessThan(300);
    await waitFor(
      'a new container after the restart',
      async () => JSON.parse((await viaRouter(routerPort, service.slug)).text).boot !== before.boot,
      60_000,
    );
  }, 400_000);
});

describe('containers where there is no engine', () => {
  const t = useServer({ SLIPWAY_CONTAINERS: 'off' });

  it('refuses docker and image services with the reason, and /status says so', async () => {
    const owner = await signUp(t.api);
    for (const body of [
      { serviceDetails: { runtime: 'docker' } },
      { serviceDetails: { runtime: 'image' }, image: { imagePath: 'docker.io/library/nginx:1.27' } },
    ]) {
      const res = await t.api.post('/v1/services', { type: 'web_service', name: 'no-engine', ...body }, owner);
      expect(res.status, res.text).toBe(400);
      expect(res.body.message).toMatch(/needs a container engine.*SLIPWAY_CONTAINERS=off/);
    }
    expect((await t.api.get('/status')).body.containers).toEqual({ none: 'turned off by SLIPWAY_CONTAINERS=off' });
  });
});
