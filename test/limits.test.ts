import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { PLAN_LIMITS } from '../src/model/services.js';
import { detectCapabilities } from '../src/runtime/local/capabilities.js';
import { createLocalRuntime } from '../src/runtime/local/index.js';
import type { Limits } from '../src/model/limits.js';
import { deployFixture, processesOf, viaRouter } from './helpers/apps.js';
import { signUp, type TestUser } from './helpers/client.js';
import { REPO_ROOT, sleep, waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';

// Small limits, so that hitting them is quick (the defaults per plan are checked in seccomp.test.ts).
const PIDS = 128;
const DISK_MB = 64;
const MiB = 1024 * 1024;
const TMPFS_MAGIC = 0x01021994;

// The shared network: these tests are about limits, which do not depend on it.
const t = useServer({
  SLIPWAY_PIDS_LIMIT: String(PIDS),
  SLIPWAY_DISK_LIMIT_MB: String(DISK_MB),
  SLIPWAY_NETWORK: 'shared',
});
const { limits, notes } = (await detectCapabilities(tmpdir())).capabilities;
// CI (root, bubblewrap, cgroups) must enforce every limit: a test skipped there would prove nothing.
if (process.env.SLIPWAY_REQUIRE_SERVICES === '1' && !(limits.pids && limits.disk && limits.seccomp)) {
  throw new Error(`this machine must enforce pids, disk and seccomp limits: ${notes.join('; ')}`);
}
const IS_ROOT = process.getuid?.() === 0;
const router = (slug: string, urlPath: string) =>
  viaRouter(t.server.slipway.routerPort, slug, urlPath, { timeoutMs: 30_000 });

/** The dir of the cgroup `controller` puts `pid` in (v1: its own hierarchy; v2: the unified one). */
function cgroupDir(pid: number, controller: string): string {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' '));
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n')) {
    const [, controllers = '', group = ''] = line.split(':');
    if (!controllers.split(',').includes(controller)) continue;
    const mount = mounts.find(
      ([, , type, options = '']) => type === 'cgroup' && options.split(',').includes(controller),
    );
    if (mount?.[1]) return path.join(mount[1], group);
  }
  const v2 = readFileSync(`/proc/${pid}/cgroup`, 'utf8').match(/^0::(.*)$/m)?.[1];
  const mount = mounts.find(([, , type]) => type === 'cgroup2');
  if (v2 && mount?.[1]) return path.join(mount[1], v2);
  throw new Error(`pid ${pid} is in no ${controller} cgroup`);
}

let owner: TestUser;
let probe: { id: string; slug: string };
let bystander: { id: string; slug: string };
let buildOutput = '';

beforeAll(async () => {
  owner = await signUp(t.api);
  const [p, b] = await Promise.all([
    // A short shutdown delay: the bomb ignores nothing, but it forks faster than SIGTERMs arrive, so SIGKILL ends it.
    deployFixture(t.api, owner, 'limits-probe', {
      serviceDetails: { runtime: 'node', buildCommand: 'node build.js', maxShutdownDelaySeconds: 1 },
    }),
    deployFixture(t.api, owner, 'node-web'),
  ]);
  expect(p.deploy.status, JSON.stringify(p.deploy)).toBe('live');
  expect(b.deploy.status).toBe('live');
  probe = p.service;
  bystander = b.service;
  buildOutput = p.deploy.buildOutput;
}, 120_000);

describe('writable disk', () => {
  it.skipIf(!limits.disk)(
    'ends a disk fill of $HOME, /tmp and the instance tmp dir in ENOSPC at the limit, in memory rather than on the host',
    async () => {
      let instanceDir = '';
      for (const dir of ['home', 'tmp', 'scratch']) {
        const fill = (await router(probe.slug, `/fill?dir=${dir}`)).json();
        expect(fill, dir).toMatchObject({ code: 'ENOSPC', fsType: TMPFS_MAGIC, fsBytes: DISK_MB * MiB });
        expect(fill.bytes, dir).toBeGreaterThan((DISK_MB - 2) * MiB);
        expect(fill.bytes, dir).toBeLessThanOrEqual(DISK_MB * MiB);
        if (dir === 'home') instanceDir = path.dirname(fill.dir); // $HOME is <instance dir>/home
      }
      // Three full 64 MiB files exist now, none of them on the host: the instance dir holds only logs and instance.json.
      const onHost = Number(execFileSync('du', ['-sb', instanceDir], { encoding: 'utf8' }).split('\t')[0]);
      expect(onHost).toBeLessThan(MiB);
      expect((await router(probe.slug, '/health')).text).toBe('"ok"'); // the app itself is fine
    },
  );
});

describe('syscalls', () => {
  it.skipIf(!limits.seccomp)(
    'runs the app under the seccomp filter: a user namespace is refused with EPERM, plain calls work',
    async () => {
      const res = (await router(probe.slug, '/syscalls')).json();
      expect(res.seccomp).toBe('2');
      expect(res.userns.status).not.toBe(0);
      expect(res.userns.stderr).toMatch(/Operation not permitted/);
      expect(res.plain).toEqual({ status: 0, stderr: '' });
    },
  );
});

describe('builds', () => {
  it('holds the build to the same process, /tmp and syscall limits', () => {
    const line = buildOutput.split('\n').find((l) => l.startsWith('LIMITS-PROBE '));
    expect(line, buildOutput).toBeDefined();
    const result = JSON.parse(line!.slice('LIMITS-PROBE '.length));
    if (limits.pids) expect(result.fork).toMatchObject({ code: 'EAGAIN', spawned: expect.any(Number) });
    if (limits.pids) expect(result.fork.spawned).toBeLessThan(PIDS);
    if (limits.disk) expect(result.fill).toMatchObject({ code: 'ENOSPC', fsBytes: DISK_MB * MiB });
    if (limits.seccomp) expect(result.syscalls.seccomp).toBe('2');
  });
});

describe('processes', () => {
  it.skipIf(!limits.pids)(
    'stops a fork bomb at the pids limit; the API and other apps stay responsive, and the service still stops',
    async () => {
      const [appPid] = processesOf(probe.id);
      const group = cgroupDir(appPid!, 'pids');
      expect(readFileSync(path.join(group, 'pids.max'), 'utf8').trim()).toBe(String(PIDS));

      // The app's own fork loop gets EAGAIN before the limit (its node threads count too).
      const fork = (await router(probe.slug, `/fork?max=${PIDS * 2}`)).json();
      expect(fork.code).toBe('EAGAIN');
      expect(fork.spawned).toBeGreaterThan(PIDS / 2);
      expect(fork.spawned).toBeLessThan(PIDS);
      await router(probe.slug, '/release');

      // A shell fork bomb that never gives up: only the limit holds it.
      await router(probe.slug, '/bomb');
      await waitFor(
        'the bomb to reach the limit',
        async () => Number(readFileSync(path.join(group, 'pids.current'), 'utf8')) >= PIDS - 5,
        20_000,
      );
      for (let i = 0; i < 10; i++) {
        const begun = Date.now();
        const health = await t.api.get('/api/health');
        expect(health.status).toBe(200);
        expect(Date.now() - begun).toBeLessThan(1500); // milliseconds normally; the bomb is held to the app's CPU share
        expect((await router(bystander.slug, '/')).status).toBe(200);
        expect(Number(readFileSync(path.join(group, 'pids.current'), 'utf8'))).toBeLessThanOrEqual(PIDS);
        await sleep(200);
      }

      // The kernel refused forks at the limit (pids.events counts them).
      expect(readFileSync(path.join(group, 'pids.events'), 'utf8')).toMatch(/^max [1-9]/m);
      const suspended = await t.api.post(`/v1/services/${probe.id}/suspend`, {}, owner);
      expect(suspended.status).toBeLessThan(300);
      await waitFor(
        'every process of the bombed service to be gone',
        async () => processesOf(probe.id).length === 0,
        20_000,
      );
      expect((await router(bystander.slug, '/')).status).toBe(200);
    },
    60_000,
  );
});

/** The runtime fixture app started on a local runtime of its own (shared network) with `limits`. */
async function startFixtureInstance(name: string, limits: Limits) {
  const dataDir = mkdtempSync(path.join(tmpdir(), `slipway-${name}-`));
  const appDir = path.join(dataDir, 'app');
  mkdirSync(appDir);
  copyFileSync(path.join(REPO_ROOT, 'test/fixtures/runtime/app.cjs'), path.join(appDir, 'app.cjs'));
  const runtime = await createLocalRuntime({ dataDir, network: 'shared' });
  const port = await runtime.instancePort();
  const instanceDir = path.join(dataDir, 'instances/i1');
  const handle = await runtime.start({
    instanceId: `${name}-${process.pid}`,
    serviceId: 'svc',
    deployId: 'dep',
    instanceDir,
    command: 'node app.cjs',
    env: { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, PORT: String(port) },
    sandbox: { appDir, workDir: '', writableDirs: [] },
    limits,
  });
  const stop = async () => {
    await runtime.stop(handle, 1000);
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { runtime, handle, port, instanceDir, stop };
}

/** The CPU a cgroup v1 or v2 dir gives, in millicores. */
function cpuMillicores(dir: string): number {
  const [quota, period] = existsSync(path.join(dir, 'cpu.max'))
    ? readFileSync(path.join(dir, 'cpu.max'), 'utf8').trim().split(' ').map(Number)
    : ['cpu.cfs_quota_us', 'cpu.cfs_period_us'].map((f) => Number(readFileSync(path.join(dir, f), 'utf8')));
  return Math.round((quota! / period!) * 1000);
}

describe('CPU', () => {
  it.skipIf(!limits.cpu)(
    'a live instance runs within its plan’s CPU at once: its start-up boost ends when it is healthy',
    async () => {
      const { service, deploy } = await deployFixture(t.api, owner, 'node-web');
      expect(deploy.status).toBe('live');
      // Well within the boost's longest (10 s): what ended it is the health check passing.
      const pids = processesOf(service.id);
      expect(pids.length).toBeGreaterThan(0);
      expect(cpuMillicores(cgroupDir(pids[0]!, 'cpu'))).toBe(PLAN_LIMITS.starter.cpuMillicores);
    },
    60_000,
  );

  it.skipIf(!limits.cpu)(
    'starts an instance with more CPU than its plan (start-up boost) until it is settled',
    async () => {
      const { runtime, handle, port, stop } = await startFixtureInstance('boost', PLAN_LIMITS.free);
      try {
        // Its first process joins the instance's group as it starts.
        const dir = await waitFor('the instance in its cgroup', async () => {
          const found = cgroupDir(handle.pid, 'cpu');
          return found.includes(`/boost-${process.pid}`) ? found : undefined;
        });
        const boosted = Math.max(PLAN_LIMITS.free.cpuMillicores, Math.min(1000, availableParallelism() * 1000));
        expect(boosted).toBeGreaterThan(PLAN_LIMITS.free.cpuMillicores);
        expect(cpuMillicores(dir)).toBe(boosted);
        await runtime.waitHealthy({ handle, host: '127.0.0.1', port, path: '/health', timeoutMs: 10_000 });
        runtime.settle!(handle);
        expect(cpuMillicores(dir)).toBe(PLAN_LIMITS.free.cpuMillicores);
      } finally {
        await stop();
      }
    },
  );
});

describe('capabilities', () => {
  it('enforces every limit this machine allows, and has a note for each one it cannot', () => {
    const bwrap = ['/usr/bin/bwrap', '/bin/bwrap'].find((file) => existsSync(file));
    const help = bwrap ? execFileSync(bwrap, ['--help'], { encoding: 'utf8' }) : '';
    const mounts = readFileSync('/proc/self/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' '));
    const pidsController = mounts.some(
      ([, root = '', type, options = '']) =>
        (type === 'cgroup' && options.split(',').includes('pids')) ||
        (type === 'cgroup2' && readFileSync(path.join(root, 'cgroup.controllers'), 'utf8').includes('pids')),
    );
    if (IS_ROOT && pidsController) expect(limits.pids).toBe(true);
    if (IS_ROOT && help.includes('--size')) expect(limits.disk).toBe(true);
    if (IS_ROOT && help.includes('--seccomp') && ['x64', 'arm64'].includes(process.arch))
      expect(limits.seccomp).toBe(true);
    if (!limits.pids) expect(notes.join('\n')).toMatch(/process limits are not applied/);
    if (!limits.disk) expect(notes.join('\n')).toMatch(/not size-limited/);
    if (!limits.seccomp) expect(notes.join('\n')).toMatch(/no seccomp filter/);
  });

  it.skipIf(!limits.pids || !limits.disk)(
    'gives a starter instance 1,024 processes and 1 GiB $HOME and /tmp when nothing overrides the plan',
    async () => {
      const { runtime, handle, port, instanceDir, stop } = await startFixtureInstance('limits', PLAN_LIMITS.starter);
      try {
        await runtime.waitHealthy({ handle, host: '127.0.0.1', port, path: '/health', timeoutMs: 10_000 });
        expect(readFileSync(path.join(cgroupDir(handle.pid, 'pids'), 'pids.max'), 'utf8').trim()).toBe('1024');
        const res = await fetch(`http://127.0.0.1:${port}/read?file=/proc/self/mounts`);
        const mounted = ((await res.json()) as { value: string }).value;
        for (const dir of [path.join(instanceDir, 'home'), '/tmp'])
          expect(mounted).toMatch(new RegExp(`^tmpfs ${dir} tmpfs [^ ]*size=1048576k`, 'm'));
      } finally {
        await stop();
      }
    },
  );
});
