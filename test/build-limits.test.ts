/**
 * Build limits (docs/deploys.md, "Build limits"): each service's builds write to a disk of capped size, an artifact has a
 * largest size, and builds run a few at a time, shared fairly between workspaces, the rest `queued`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { finished, packFixture, upload } from './helpers/apps.js';
import { signUp, type Client, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

const t = useServer({
  SLIPWAY_BUILD_DISK_MB: '64',
  SLIPWAY_ARTIFACT_MAX_MB: '8',
  SLIPWAY_BUILD_CONCURRENCY: '2',
  SLIPWAY_BUILD_CONCURRENCY_PER_WORKSPACE: '1',
});

/** A web service built with `buildCommand`; its first deploy started (an upload). */
async function buildWith(api: Client, owner: TestUser, buildCommand: string) {
  const created = await api.post(
    '/v1/services',
    {
      type: 'web_service',
      name: `b-${Math.random().toString(36).slice(2, 8)}`,
      serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand } },
    },
    owner,
  );
  expect(created.status, created.text).toBe(201);
  const service = created.body.service as { id: string };
  const up = await upload(api, owner, service.id, await packFixture('node-web'));
  expect(up.status, up.text).toBe(201);
  return { service, deployId: up.body.deployId as string };
}

/** This process's mounts: id and mount point (the octal escapes of /proc/self/mountinfo decoded). */
const mountInfo = () =>
  readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '))
    .map(([id, , , , point = '']) => ({
      id,
      point: point.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))),
    }));

const statusOf = async (api: Client, owner: TestUser, serviceId: string, deployId: string) =>
  (await api.get(`/v1/services/${serviceId}/deploys/${deployId}`, owner)).body.status as string;

describe('build limits', () => {
  it("stops a build at its disk's size, says so with the figure and the fix, and keeps the host's disk", async () => {
    const owner = await signUp(t.api);
    const { service, deployId } = await buildWith(t.api, owner, 'dd if=/dev/zero of=big bs=1M count=1500');
    const failed = await finished(t.api, owner, service.id, deployId, 120_000);
    expect(failed.status).toBe('build_failed');
    expect(failed.failureReason).toMatch(
      /^the build command failed: the build disk is full: .* 64 MiB \(SLIPWAY_BUILD_DISK_MB\).*raises SLIPWAY_BUILD_DISK_MB$/,
    );
    // What the build wrote is gone from the host (the disk's image holds a few MiB once the build is cleaned up, which
    // happens right after the build, off the deploy's critical path).
    const dir = path.join(t.server.dataDir, 'services', service.id);
    const usedKib = () => Number(execFileSync('du', ['-s', '-k', '-x', dir], { encoding: 'utf8' }).split('\t')[0]);
    await waitFor('the build cleaned up', async () => (usedKib() < 64 * 1024 ? true : undefined), 20_000);
    expect((await t.api.get('/status')).body.isolation.limits.buildDisk).toBe(true);
  }, 180_000);

  it('keeps a build disk mounted for the service’s next build, and unmounts it when the service is deleted', async () => {
    const owner = await signUp(t.api);
    const { service, deployId } = await buildWith(t.api, owner, 'true');
    expect((await finished(t.api, owner, service.id, deployId, 120_000)).status).toBe('live');
    const buildDir = path.join(t.server.dataDir, 'services', service.id, 'build');
    const mountId = () => mountInfo().find((m) => m.point === buildDir)?.id;
    const first = mountId();
    expect(first).toBeDefined();
    const again = await t.api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    expect((await finished(t.api, owner, service.id, again.body.id, 120_000)).status).toBe('live');
    expect(mountId()).toBe(first); // the same mount: no unmount and mount in between
    expect((await t.api.delete(`/v1/services/${service.id}`, owner)).status).toBe(204);
    expect(mountId()).toBeUndefined();
    await waitFor('the service dir removed', async () => (existsSync(path.dirname(buildDir)) ? undefined : true));
  }, 180_000);

  it('refuses an artifact over SLIPWAY_ARTIFACT_MAX_MB, with its size', async () => {
    const owner = await signUp(t.api);
    const { service, deployId } = await buildWith(t.api, owner, 'head -c 16777216 /dev/zero > blob');
    const failed = await finished(t.api, owner, service.id, deployId, 120_000);
    expect(failed.status).toBe('build_failed');
    expect(failed.failureReason).toMatch(
      /^the build's output is 1[67] MiB, over the 8 MiB an artifact may hold \(SLIPWAY_ARTIFACT_MAX_MB\)/,
    );
  }, 180_000);

  it("queues builds past the workspace's share, and another workspace's build does not wait behind them", async () => {
    const busy = await signUp(t.api);
    const builds: Array<{ service: { id: string }; deployId: string }> = [];
    for (let i = 0; i < 3; i++) builds.push(await buildWith(t.api, busy, 'sleep 6'));
    // One of the busy workspace's builds runs (its share is 1), the others wait: queued, Render's status.
    await waitFor(
      'one build running and two queued',
      async () => {
        const statuses = await Promise.all(builds.map((b) => statusOf(t.api, busy, b.service.id, b.deployId)));
        const running = statuses.filter((s) => s === 'build_in_progress').length;
        const queued = statuses.filter((s) => s === 'queued').length;
        expect(running).toBeLessThanOrEqual(1);
        return running === 1 && queued === 2 ? statuses : undefined;
      },
      60_000,
      100,
    );
    const other = await signUp(t.api);
    const mine = await buildWith(t.api, other, 'true');
    const seen = new Set<string>();
    const live = await waitFor(
      "the other workspace's deploy",
      async () => {
        const status = await statusOf(t.api, other, mine.service.id, mine.deployId);
        seen.add(status);
        return ['live', 'build_failed', 'update_failed'].includes(status) ? status : undefined;
      },
      60_000,
      50,
    );
    expect(live).toBe('live');
    expect([...seen]).not.toContain('queued'); // it took the slot the busy workspace may not
    // The busy workspace's builds were still waiting their turn meanwhile (each takes 6 s, one at a time).
    const last = builds[2]!;
    expect(['queued', 'build_in_progress']).toContain(await statusOf(t.api, busy, last.service.id, last.deployId));

    // A queued deploy can be canceled: it stops waiting.
    const waiting = await waitFor(
      'a queued build',
      async () => {
        for (const b of builds) if ((await statusOf(t.api, busy, b.service.id, b.deployId)) === 'queued') return b;
        return undefined;
      },
      30_000,
      100,
    );
    const canceled = await t.api.post(
      `/v1/services/${waiting.service.id}/deploys/${waiting.deployId}/cancel`,
      {},
      busy,
    );
    expect(canceled.status, canceled.text).toBe(200);
    expect(canceled.body.status).toBe('canceled');
    for (const b of builds) await finished(t.api, busy, b.service.id, b.deployId, 60_000);
  }, 180_000);
});
