/**
 * Out-of-memory kills say so: a build killed by the kernel at its buildPlan's memory limit fails with
 * that reason and how to raise it (deploy and build_ended event), and an instance killed at its limit is
 * reported in server_failed with Render's `oomKilled` reason rather than a plain early exit. A build gets
 * its buildPlan's memory, not its service's plan's: one that needs more than a starter instance's 512 MiB passes.
 */
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { detectCapabilities } from '../src/runtime/local/capabilities.js';
import { deployFixture, finished, packFixture, upload, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

// A starter build gets 768 MiB here (2 GiB by default), so the hog dies sooner; performance gets 1 GiB.
const t = useServer({
  SLIPWAY_NETWORK: 'shared',
  SLIPWAY_BUILD_STARTER_MEMORY_MB: '768',
  SLIPWAY_BUILD_PERFORMANCE_MEMORY_MB: '1024',
});
const { cgroups } = (await detectCapabilities(tmpdir())).capabilities;
if (cgroups === 'none' && process.env.SLIPWAY_REQUIRE_SERVICES === '1')
  throw new Error('out-of-memory tests need writable cgroups');
/** Grows until the kernel kills it: 32 MiB at a time, every page touched. */
const HOG = 'const held = []; for (;;) held.push(Buffer.alloc(32 << 20, 1))';
/** Holds `mb` MiB, every page touched, then exits 0. */
const hold = (mb: number) =>
  `const held = []; for (let i = 0; i < ${mb / 32}; i++) held.push(Buffer.alloc(32 << 20, 1))`;

const eventsOf = async (as: { cookie: string }, serviceId: string, type: string) =>
  (await t.api.get(`/v1/services/${serviceId}/events?type=${type}&limit=100`, as)).body.map((e: any) => e.event);

describe.skipIf(cgroups === 'none')('out-of-memory kills', () => {
  it('fail a build with that reason, in the deploy and in its build_ended event', async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: 'oom-build',
        serviceDetails: { runtime: 'node', plan: 'starter', envSpecificDetails: { buildCommand: `node -e '${HOG}'` } },
      },
      owner,
    );
    const service = created.body.service;
    const up = await upload(t.api, owner, service.id, await packFixture('node-web'));
    const deploy = await finished(t.api, owner, service.id, up.body.deployId, 90_000);
    expect(deploy.status).toBe('build_failed');
    expect(deploy.failureReason).toMatch(
      /^the build command ran out of memory at 768 MiB: the kernel killed it at its limit\. Set serviceDetails\.buildPlan to "performance" \(1024 MiB\), or the operator raises SLIPWAY_BUILD_STARTER_MEMORY_MB/,
    );
    const [ended] = await eventsOf(owner, service.id, 'build_ended');
    expect(ended.details).toMatchObject({
      deployId: deploy.id,
      buildStatus: 'failed',
      reason: { failure: { evicted: false, oomKilled: { memoryLimit: '768Mi' } } },
    });
    const [deployEnded] = await eventsOf(owner, service.id, 'deploy_ended');
    expect(deployEnded.details).toMatchObject({
      finalStatus: 'build_failed',
      reason: { failure: { evicted: false, oomKilled: { memoryLimit: '768Mi' } } },
    });
  }, 120_000);

  it("give a build its buildPlan's memory: 640 MiB passes on a 512 MiB plan, and performance's limit is named", async () => {
    const owner = await signUp(t.api);
    const create = (name: string, buildPlan: string, mb: number) =>
      t.api.post(
        '/v1/services',
        {
          type: 'web_service',
          name,
          serviceDetails: {
            runtime: 'node',
            plan: 'starter',
            buildPlan,
            envSpecificDetails: { buildCommand: `node -e '${hold(mb)}'` },
          },
        },
        owner,
      );
    const fits = (await create('fits-build', 'starter', 640)).body.service;
    expect(fits.serviceDetails.buildPlan).toBe('starter');
    const up = await upload(t.api, owner, fits.id, await packFixture('node-web'));
    const passed = await finished(t.api, owner, fits.id, up.body.deployId, 90_000);
    expect(passed.status).toBe('live');

    const big = (await create('big-build', 'performance', 1024)).body.service;
    expect(big.serviceDetails.buildPlan).toBe('performance');
    const again = await upload(t.api, owner, big.id, await packFixture('node-web'));
    const killed = await finished(t.api, owner, big.id, again.body.deployId, 90_000);
    expect(killed.status).toBe('build_failed');
    expect(killed.failureReason).toMatch(
      /^the build command ran out of memory at 1024 MiB: the kernel killed it at its limit\. The operator can raise SLIPWAY_BUILD_PERFORMANCE_MEMORY_MB/,
    );
  }, 120_000);

  it('of a running instance are reported in server_failed as oomKilled, not earlyExit', async () => {
    const owner = await signUp(t.api);
    // node-web, plus a route that makes it grow past its limit.
    const server = `
      const http = require('node:http');
      http.createServer((req, res) => {
        if (req.url === '/grow') { ${HOG} }
        res.end('ok');
      }).listen(Number(process.env.PORT), '127.0.0.1');
      process.on('SIGTERM', () => process.exit(0));`;
    const { service, deploy } = await deployFixture(
      t.api,
      owner,
      'node-web',
      { serviceDetails: { runtime: 'node', plan: 'starter' } },
      { 'server.js': server },
    );
    expect(deploy.status).toBe('live');
    await viaRouter(t.server.slipway.routerPort, service.slug, '/grow', { timeoutMs: 30_000 }).catch(() => undefined);
    const [failed] = await waitFor(
      'server_failed',
      async () => {
        const found = await eventsOf(owner, service.id, 'server_failed');
        return found.length > 0 ? found : undefined;
      },
      30_000,
    );
    expect(failed.details).toMatchObject({ reason: { oomKilled: { memoryLimit: '512Mi' } } });
    expect(failed.details.reason).not.toHaveProperty('earlyExit');
  }, 120_000);

  it("of an instance while it starts fail the deploy at once, naming the plan's limit", async () => {
    const owner = await signUp(t.api);
    const started = Date.now();
    const { deploy } = await deployFixture(
      t.api,
      owner,
      'node-web',
      { serviceDetails: { runtime: 'node', plan: 'starter' } },
      { 'server.js': HOG },
    );
    expect(deploy.status).toBe('update_failed');
    expect(deploy.failureReason).toContain(
      "it ran out of memory: the kernel killed it at its plan's limit of 512 MiB; choose a larger plan, serviceDetails.plan",
    );
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);

  it('are not claimed for an instance that simply exits', async () => {
    const owner = await signUp(t.api);
    const server = `
      const http = require('node:http');
      http.createServer((req, res) => {
        if (req.url === '/exit') process.exit(3);
        res.end('ok');
      }).listen(Number(process.env.PORT), '127.0.0.1');`;
    const { service } = await deployFixture(t.api, owner, 'node-web', {}, { 'server.js': server });
    await viaRouter(t.server.slipway.routerPort, service.slug, '/exit').catch(() => undefined);
    const [failed] = await waitFor(
      'server_failed',
      async () => {
        const found = await eventsOf(owner, service.id, 'server_failed');
        return found.length > 0 ? found : undefined;
      },
      30_000,
    );
    expect(failed.details.reason).toEqual({ evicted: false, earlyExit: true });
  }, 120_000);
});
