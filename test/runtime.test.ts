import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { machineStatus } from '../src/core/machine-status.js';
import { run } from '../src/lib/exec.js';
import { limitFiles } from '../src/runtime/local/cgroups.js';
import { detectCgroups } from '../src/runtime/local/cgroups-detect.js';
import { createLocalRuntime } from '../src/runtime/local/index.js';
import { descendantsOf, isRunning, readStat, type ProcStat } from '../src/runtime/local/proc.js';
import {
  cgroupJoinScript,
  ENV_FROM_FD3,
  envScript,
  REAPER_SCRIPT,
  sandboxedCommand,
  type SandboxedProcess,
  type SandboxPolicy,
} from '../src/runtime/local/sandbox.js';
import type { Limits } from '../src/model/limits.js';
import type { InstanceHandle, InstanceSpec } from '../src/runtime/types.js';
import { logMachineReport } from '../src/app/startup-summary.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/runtime');
const IS_ROOT = process.getuid?.() === 0;
const LIMITS: Limits = { memoryMb: 256, cpuMillicores: 500, pids: 256, diskMb: 64 };
/** node must be found inside the sandbox wherever it is installed. */
const APP_PATH = `${path.dirname(process.execPath)}:/usr/bin:/bin`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor<T>(what: string, check: () => T | undefined | false, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Live processes whose command line is exactly `argv` (unique sleep durations mark a test's processes). */
function runningWithArgs(argv: string[]): number[] {
  return descendantsOf(1)
    .filter((proc) => {
      try {
        return proc.state !== 'Z' && readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8') === argv.join('\0') + '\0';
      } catch {
        return false;
      }
    })
    .map((proc) => proc.pid);
}

// A data dir like Slipway's: 0700, a secret key, another service's files, and a deployed artifact.
const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-runtime-'));
chmodSync(dataDir, 0o700);
const secretKey = path.join(dataDir, 'secret.key');
writeFileSync(secretKey, 'top secret', { mode: 0o600 });
const otherServiceFile = path.join(dataDir, 'services/svc-other/instances/x/tmp/private.txt');
mkdirSync(path.dirname(otherServiceFile), { recursive: true });
writeFileSync(otherServiceFile, 'not yours');
const appDir = path.join(dataDir, 'artifacts/dep-1');
mkdirSync(appDir, { recursive: true });
copyFileSync(path.join(FIXTURES, 'app.cjs'), path.join(appDir, 'app.cjs'));

const logged: { level: string; m?: string }[] = [];
// The shared network: these tests are about the sandbox and limits (test/network-isolation.test.ts covers namespaces).
const runtime = await createLocalRuntime({
  dataDir,
  network: 'shared',
  log: { info: (_o, m) => logged.push({ level: 'info', m }), warn: (_o, m) => logged.push({ level: 'warn', m }) },
});
const cgroupsWritable = runtime.capabilities.cgroups !== 'none';

const started: InstanceHandle[] = [];
let count = 0;

function instanceSpec(env: Record<string, string>, limits = LIMITS): InstanceSpec {
  const instanceId = `rt-${process.pid}-${++count}`;
  const instanceDir = path.join(dataDir, 'services/svc-a/instances', instanceId);
  return {
    instanceId,
    serviceId: 'svc-a',
    deployId: 'dep-1',
    instanceDir,
    command: 'node app.cjs',
    env: { PATH: APP_PATH, ...env },
    sandbox: { appDir, workDir: '', writableDirs: [path.join(instanceDir, 'tmp')] },
    limits,
  };
}

async function startApp(env: Record<string, string> = {}, limits = LIMITS) {
  const port = await runtime.instancePort();
  const spec = instanceSpec({ PORT: String(port), ...env }, limits);
  const handle = await runtime.start(spec);
  started.push(handle);
  return { handle, port, spec };
}

async function get<T>(port: number, route: string, file?: string): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${port}${route}${file ? `?file=${encodeURIComponent(file)}` : ''}`);
  return (await res.json()) as T;
}

/** The cgroup control file of `controller` that `pid` is in. */
function cgroupFile(pid: number, controller: 'memory' | 'cpu', file: string): string {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' '));
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n')) {
    const [, controllers = '', group = ''] = line.split(':');
    const v2 = runtime.capabilities.cgroups === 'v2';
    if (v2 ? controllers !== '' : !controllers.split(',').includes(controller)) continue;
    const mount = mounts.find(([, , type, options = '']) =>
      v2 ? type === 'cgroup2' : type === 'cgroup' && options.split(',').includes(controller),
    );
    if (mount?.[1]) return path.join(mount[1], group, file);
  }
  throw new Error(`pid ${pid} is in no ${controller} cgroup`);
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((handle) => runtime.stop(handle, 0)));
});

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('sandboxedCommand (pure)', () => {
  const policy: SandboxPolicy = {
    bwrap: { path: '/usr/bin/bwrap', systemMounts: ['--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin'] },
    runAs: { setprivPath: '/usr/bin/setpriv', uid: 65534, gid: 65534 },
  };
  const proc: SandboxedProcess = {
    kind: 'instance',
    command: 'node server.js',
    env: { PORT: '3000', HOME: '/data/i1/home' },
    cwd: '/data/app/web',
    readOnlyDirs: ['/data/app'],
    writableDirs: ['/data/i1/home'],
    cgroupProcsFiles: ['/cg/memory/slipway/i1/cgroup.procs', '/cg/cpu/slipway/i1/cgroup.procs'],
  };

  it('joins the cgroups, then runs bwrap with only the allowed mounts, then drops to the app user', () => {
    expect(sandboxedCommand(policy, proc)).toEqual({
      file: '/bin/sh',
      args: [
        '-c',
        cgroupJoinScript(proc.cgroupProcsFiles),
        'slipway-cgroup-join',
        '/usr/bin/bwrap',
        '--ro-bind',
        '/usr',
        '/usr',
        '--symlink',
        'usr/bin',
        '/bin',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        '--perms',
        '1777',
        '--tmpfs',
        '/tmp',
        '--perms',
        '0755',
        '--dir',
        '/data/app',
        '--ro-bind',
        '/data/app',
        '/data/app',
        '--perms',
        '0755',
        '--dir',
        '/data/i1/home',
        '--bind',
        '/data/i1/home',
        '/data/i1/home',
        '--unshare-pid',
        '--unshare-ipc',
        '--unshare-uts',
        '--chdir',
        '/data/app/web',
        '--clearenv',
        '--',
        '/usr/bin/setpriv',
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        '--no-new-privs',
        '--',
        '/bin/sh',
        '-c',
        REAPER_SCRIPT,
        'slipway-app',
        'node server.js',
      ],
      env: {},
      // The environment travels on fd 3, never on the command line (/proc/<pid>/cmdline is world-readable), and only
      // the app user's shell reads it: setpriv, which runs as root, gets none.
      fd3Data: "export PORT='3000'\nexport HOME='/data/i1/home'\n",
    });
  });

  it('lets only builds die with Slipway', () => {
    const build = sandboxedCommand({ bwrap: policy.bwrap }, { ...proc, kind: 'build', cgroupProcsFiles: [] });
    expect(build.args.slice(0, 1)).toEqual(['--die-with-parent']);
    expect(sandboxedCommand({ bwrap: policy.bwrap }, { ...proc, cgroupProcsFiles: [] }).args).not.toContain(
      '--die-with-parent',
    );
  });

  it('without bwrap passes env and cwd directly, or with a user to drop to, the env to that user only', () => {
    const plain = { ...proc, cgroupProcsFiles: [] };
    expect(sandboxedCommand({}, plain)).toEqual({
      file: '/bin/sh',
      args: ['-c', 'node server.js'],
      env: proc.env,
      cwd: proc.cwd,
    });
    expect(sandboxedCommand({ runAs: policy.runAs }, plain)).toEqual({
      file: '/usr/bin/setpriv',
      args: [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        '--no-new-privs',
        '--',
        '/bin/sh',
        '-c',
        `${ENV_FROM_FD3}; exec 3<&-; exec /bin/sh -c "$1"`,
        'slipway-app',
        'node server.js',
      ],
      env: {}, // setpriv runs as root: the tenant's environment (LD_PRELOAD…) must not reach it
      cwd: proc.cwd,
      fd3Data: envScript(proc.env),
    });
  });

  it('quotes cgroup paths for the join script and refuses to go on if joining fails', () => {
    expect(cgroupJoinScript(["/cg/it's"])).toBe(
      `for f in '/cg/it'\\''s'; do echo $$ > "$f" || { echo "slipway: cannot join cgroup $f" >&2; exit 125; }; done; exec "$@"`,
    );
  });

  it('turns limits into cgroup control files', () => {
    const limits = { memoryMb: 512, cpuMillicores: 250, pids: 100, diskMb: 64 };
    expect(limitFiles('v1', { controllers: ['memory', 'cpu'], swap: true }, limits)).toEqual([
      ['memory.limit_in_bytes', '536870912'],
      ['memory.memsw.limit_in_bytes', '536870912'],
      ['cpu.cfs_period_us', '100000'],
      ['cpu.cfs_quota_us', '25000'],
    ]);
    expect(limitFiles('v2', { controllers: ['memory', 'cpu'], swap: true }, limits)).toEqual([
      ['memory.max', '536870912'],
      ['memory.swap.max', '0'],
      ['cpu.max', '25000 100000'],
    ]);
    expect(
      limitFiles('v1', { controllers: ['cpu'], swap: false }, { ...limits, memoryMb: 1, cpuMillicores: 1 }),
    ).toEqual([
      ['cpu.cfs_period_us', '100000'],
      ['cpu.cfs_quota_us', '1000'],
    ]);
    expect(limitFiles('v1', { controllers: ['pids'], swap: false }, limits)).toEqual([['pids.max', '100']]);
    // A build's group (background) takes an eighth of the default CPU weight: nice does not reach across groups.
    expect(limitFiles('v1', { controllers: ['cpu'], swap: false }, limits, true)).toContainEqual(['cpu.shares', '128']);
    expect(limitFiles('v2', { controllers: ['cpu'], swap: false }, limits, true)).toContainEqual(['cpu.weight', '12']);
    expect(limitFiles('v2', { controllers: ['memory'], swap: false }, limits, true)).not.toContainEqual([
      'cpu.weight',
      '1',
    ]);
  });
});

describe('the sandbox reaper (shell)', () => {
  // In a pid namespace of its own, as in bwrap: the reaper's `kill -KILL -1` must reach nothing else.
  // The environment comes on fd 3, as the sandbox gives it (envScript).
  const reap = (script: string, command: string, env: Record<string, string> = {}) => {
    const file = path.join(dataDir, 'reaper-env');
    writeFileSync(file, envScript({ PATH: '/usr/bin:/bin', ...env }));
    const fd = openSync(file, 'r');
    try {
      return spawnSync('unshare', ['--pid', '--fork', '/bin/sh', '-c', script, 'slipway-app', command], {
        env: {},
        stdio: ['ignore', 'pipe', 'pipe', fd],
      });
    } finally {
      closeSync(fd);
    }
  };

  it('runs no command once a stop came before it started, and ignores an app env var named stopping', () => {
    // The SIGTERM lands right after the trap is set, as when a job is canceled while its sandbox starts.
    const early = REAPER_SCRIPT.replace('trap stopping=1 TERM INT HUP', (trap) => `${trap}; kill -TERM $$`);
    expect(early).not.toBe(REAPER_SCRIPT);
    const stopped = reap(early, 'echo ran');
    expect(stopped.stdout.toString()).toBe('');
    expect(stopped.status).toBe(143);
    const ran = reap(REAPER_SCRIPT, 'echo ran', { stopping: '1' });
    expect(ran.stdout.toString()).toBe('ran\n');
    expect(ran.status).toBe(0);
  });

  it('gives the command the environment from fd 3, any value as it was', () => {
    const value = `it's "quoted" $HOME \`x\` \\n\nand a second line\n`;
    const shown = reap(REAPER_SCRIPT, 'printf %s "$GREETING"', { GREETING: value });
    expect(shown.stdout.toString()).toBe(value);
    expect(shown.status).toBe(0);
  });
});

describe('local runtime', () => {
  it('detects what this machine allows; the start-up report logs it once (JSON logs)', () => {
    if (existsSync('/usr/bin/bwrap')) expect(runtime.capabilities.sandbox).toBe('bwrap');
    if (IS_ROOT) expect(runtime.capabilities.runAsUser).toEqual({ uid: 65534, gid: 65534, name: 'nobody' });
    // The caller reports (src/app/startup-summary.ts): as JSON lines, or in a terminal as the summary.
    expect(logged).toEqual([]);
    const availability = () => ({
      postgres: { mode: 'off' as const, note: 'no Postgres' },
      keyValue: { mode: 'local' as const, versions: ['7.2'] },
    });
    logMachineReport(
      { info: (_o, m) => logged.push({ level: 'info', m }), warn: (_o, m) => logged.push({ level: 'warn', m }) },
      runtime.capabilities,
      machineStatus(runtime.capabilities, { availability }),
    );
    expect(logged.filter((l) => l.level === 'info')).toHaveLength(1);
    expect(logged.filter((l) => l.level === 'warn').map((l) => l.m)).toEqual([
      ...runtime.capabilities.notes.map((n) => `runtime: ${n}`),
      'postgres datastores are off: no Postgres',
    ]);
  });

  it('runs a node app that answers health checks, with exactly the given env, logging to files', async () => {
    process.env.SLIPWAY_RUNTIME_TEST_MARKER = 'must not leak';
    const { handle, port, spec } = await startApp({ GREETING: 'hello world' }).finally(
      () => delete process.env.SLIPWAY_RUNTIME_TEST_MARKER,
    );
    await runtime.waitHealthy({ host: '127.0.0.1', handle, port, path: '/health', timeoutMs: 10_000 });
    expect(await get(port, '/health')).toBe('ok');

    const env = await get<Record<string, string>>(port, '/env');
    // HOME is the runtime's default; PWD is set by /bin/sh itself. Beside them only yarn and pnpm, as builds have
    // them: Corepack's shims first on the PATH, and Corepack's settings.
    const extraCa = process.env.NODE_EXTRA_CA_CERTS;
    expect(env).toEqual({
      ...spec.env,
      HOME: path.join(spec.instanceDir, 'home'),
      PWD: appDir,
      PATH: `${path.join(dataDir, 'toolchain', 'bin')}:${spec.env.PATH}`,
      COREPACK_ENABLE_DOWNLOAD_PROMPT: '0',
      COREPACK_NPM_REGISTRY: 'https://registry.npmjs.org',
      COREPACK_ENABLE_AUTO_PIN: '0',
      COREPACK_DEFAULT_TO_LATEST: '0',
      npm_config_update_notifier: 'false',
      ...(extraCa && existsSync(extraCa) ? { NODE_EXTRA_CA_CERTS: extraCa } : {}),
    });
    // Env values (secrets) never show on a command line: any local user can read those in /proc.
    const cmdlines = readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .map((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        } catch {
          return '';
        }
      });
    expect(cmdlines.filter((c) => c.includes('hello world'))).toEqual([]);
    const id = await get<{ uid: number; gid: number; cwd: string }>(port, '/id');
    expect(id.cwd).toBe(appDir);
    if (IS_ROOT) expect([id.uid, id.gid]).toEqual([65534, 65534]);

    expect(readFileSync(handle.stdoutPath, 'utf8')).toContain('app starting (serve)');
    expect(readFileSync(handle.stderrPath, 'utf8')).toContain('app stderr line');
    expect(JSON.parse(readFileSync(path.join(spec.instanceDir, 'instance.json'), 'utf8'))).toEqual({
      pid: handle.pid,
      startTime: handle.startTime,
      startedAt: handle.startedAt.toISOString(),
    });
    expect(runtime.isAlive(handle)).toBe(true);
    expect(runtime.isAlive({ pid: handle.pid, startTime: String(Number(handle.startTime) + 1) })).toBe(false);
  });

  it('keeps the app away from the data dir and other services, with its app dir read-only', async () => {
    const { handle, port, spec } = await startApp();
    await runtime.waitHealthy({ host: '127.0.0.1', handle, port, path: '/health', timeoutMs: 10_000 });
    const read = (file: string) => get<{ ok: boolean; value?: string; code?: string }>(port, '/read', file);
    const write = (file: string) => get<{ ok: boolean; code?: string }>(port, '/write', file);

    expect(await read(path.join(appDir, 'app.cjs'))).toMatchObject({ ok: true }); // the probe itself works
    expect(await read(secretKey)).toEqual({ ok: false, code: 'ENOENT' });
    expect(await read(otherServiceFile)).toEqual({ ok: false, code: 'ENOENT' });
    expect(await read(path.join(spec.instanceDir, 'instance.json'))).toEqual({ ok: false, code: 'ENOENT' });
    expect((await write(path.join(appDir, 'new.txt'))).ok).toBe(false);
    expect(await write(path.join(spec.instanceDir, 'home/file.txt'))).toEqual({ ok: true });
    expect(await write(path.join(spec.instanceDir, 'tmp/file.txt'))).toEqual({ ok: true });
    if (IS_ROOT) expect(statSync(path.join(spec.instanceDir, 'tmp/file.txt')).uid).toBe(65534);
  });

  it.skipIf(!cgroupsWritable)(
    'applies memory and CPU limits to the app and everything it starts (skipped when cgroups are not writable)',
    async () => {
      const { handle, port } = await startApp({ SPAWN_SLEEP: '969' }, { ...LIMITS, memoryMb: 200, cpuMillicores: 250 });
      await runtime.waitHealthy({ host: '127.0.0.1', handle, port, path: '/health', timeoutMs: 10_000 });
      runtime.settle!(handle); // up: its start-up CPU boost ends (core does this once an instance is healthy)
      const v2 = runtime.capabilities.cgroups === 'v2';
      expect(
        readFileSync(cgroupFile(handle.pid, 'memory', v2 ? 'memory.max' : 'memory.limit_in_bytes'), 'utf8').trim(),
      ).toBe(String(200 * 1024 * 1024));
      expect(readFileSync(cgroupFile(handle.pid, 'cpu', v2 ? 'cpu.max' : 'cpu.cfs_quota_us'), 'utf8').trim()).toBe(
        v2 ? '25000 100000' : '25000',
      );
      // Joined before anything ran: every process of the instance is in the same groups.
      const groups = readFileSync(`/proc/${handle.pid}/cgroup`, 'utf8');
      await waitFor('the sleep child', () => descendantsOf(handle.pid).find((p) => p.comm === 'sleep'));
      for (const proc of descendantsOf(handle.pid))
        expect(readFileSync(`/proc/${proc.pid}/cgroup`, 'utf8')).toBe(groups);

      const memoryGroup = path.dirname(cgroupFile(handle.pid, 'memory', 'x'));
      await runtime.stop(handle, 1000);
      expect(existsSync(memoryGroup)).toBe(false);
    },
  );

  it.skipIf(!cgroupsWritable)(
    'sweeps empty groups left behind, never one with a process in it (skipped when cgroups are not writable)',
    async () => {
      const cgroups = (await detectCgroups([]))!;
      const empty = cgroups.create('sweep-test-empty', LIMITS);
      const { handle, port } = await startApp();
      await runtime.waitHealthy({ host: '127.0.0.1', handle, port, path: '/health', timeoutMs: 10_000 });
      const busy = path.dirname(cgroupFile(handle.pid, 'memory', 'x'));
      cgroups.sweepEmpty(0);
      for (const dir of empty) expect(existsSync(dir)).toBe(false);
      expect(existsSync(busy)).toBe(true);
      expect(runtime.isAlive(handle)).toBe(true);
      // A fresh group (another Slipway may be about to join it) is left alone by the default age.
      const fresh = cgroups.create('sweep-test-fresh', LIMITS);
      cgroups.sweepEmpty();
      for (const dir of fresh) expect(existsSync(dir)).toBe(true);
      await cgroups.remove(fresh);
    },
  );

  it.skipIf(!cgroupsWritable)(
    'kills an app that allocates more than its memory limit (skipped when cgroups are not writable)',
    async () => {
      const { handle } = await startApp(
        { APP_MODE: 'no-listen', ALLOCATE_MB: '300' },
        { ...LIMITS, memoryMb: 100, cpuMillicores: 1000 },
      );
      await waitFor('the app to be OOM-killed', () => !runtime.isAlive(handle), 20_000);
      expect(readFileSync(handle.stdoutPath, 'utf8')).toBe('app starting (no-listen)\n'); // it ran, but never finished allocating
      expect(readFileSync(handle.stderrPath, 'utf8')).toContain('Killed'); // by the OOM killer's SIGKILL (reported by its shell)
    },
  );

  it('stop() SIGKILLs an app ignoring SIGTERM after graceMs, with the children it started in another process group', async () => {
    const { handle, port } = await startApp({ IGNORE_SIGTERM: '1', SPAWN_SLEEP: '968' });
    await runtime.waitHealthy({ host: '127.0.0.1', handle, port, path: '/health', timeoutMs: 10_000 });
    const child = await waitFor('the sleep child', () => descendantsOf(handle.pid).find((p) => p.comm === 'sleep'));
    const app = descendantsOf(handle.pid).find((p) => p.comm === 'node');
    expect(readStat(child.pid)?.startTime).toBeTruthy();

    const begun = Date.now();
    await runtime.stop(handle, 1500);
    const elapsed = Date.now() - begun;
    expect(elapsed).toBeGreaterThanOrEqual(1500);
    expect(elapsed).toBeLessThan(3000);
    expect(readFileSync(handle.stdoutPath, 'utf8')).toContain('ignoring SIGTERM'); // it did get the SIGTERM first
    expect(runtime.isAlive(handle)).toBe(false);
    expect(isRunning(child)).toBe(false);
    expect(app).toBeDefined();
    expect(isRunning(app as ProcStat)).toBe(false);
    await runtime.stop(handle, 1000); // already gone: a no-op
  });

  it('keeps the whole sandbox in the process group of the handle, so SIGKILL to the group takes it all down', async () => {
    const { handle, port } = await startApp({ SPAWN_SLEEP: '964' });
    await runtime.waitHealthy({ host: '127.0.0.1', handle, port, path: '/health', timeoutMs: 10_000 });
    const app = await waitFor('the app and its child', () => {
      const procs = descendantsOf(handle.pid);
      return procs.some((p) => p.comm === 'sleep') && procs;
    });
    process.kill(-handle.pid, 'SIGKILL');
    await waitFor(
      'every process of the instance to be gone',
      () => !runtime.isAlive(handle) && app.every((p) => !isRunning(p)),
      3000,
    );
  });

  it('stop() returns as soon as a well-behaved app has exited on SIGTERM', async () => {
    const { handle, port } = await startApp();
    await runtime.waitHealthy({ host: '127.0.0.1', handle, port, timeoutMs: 10_000 }); // TCP check
    const begun = Date.now();
    await runtime.stop(handle, 10_000);
    expect(Date.now() - begun).toBeLessThan(2000);
    expect(runtime.isAlive(handle)).toBe(false);
  });

  // Each must end well within its 20 s grace: the process that ignored the stop's first SIGTERM is not the last one.
  it.each([
    {
      // As a sandbox's init that drops the stop's SIGTERM (it set no trap yet) and then starts the app: here a shell
      // that survives its SIGTERM (a trap) and then starts `sleep 60`, which must get one of its own.
      case: 'to a process that appears after the stop began, not only to those it first found',
      command: 'trap : TERM; sleep 0.5; sleep 60 & wait; wait',
    },
    {
      // A child forked with its parent's trap still set takes the SIGTERM as the trap, then execs the app: the app, the
      // same pid and start time, must get one of its own (CI's 20 s run-out of the case above).
      case: 'again to a process that became another program after its first',
      command: '(trap : TERM; sleep 1; exec sleep 60) & wait; wait',
    },
  ])(
    'stop() sends SIGTERM $case',
    async ({ command }) => {
      const handle = await runtime.start({ ...instanceSpec({}), command });
      started.push(handle);
      await waitFor('the first sleep', () => descendantsOf(handle.pid).some((p) => p.comm === 'sleep'));
      const begun = Date.now();
      await runtime.stop(handle, 20_000);
      expect(Date.now() - begun).toBeLessThan(5000);
    },
    60_000,
  );

  it('kills what the app left behind when its main process exits', async () => {
    const { handle } = await startApp({ APP_MODE: 'spawn-and-exit', SPAWN_SLEEP: '967' });
    const child = await waitFor('the sleep child', () => descendantsOf(handle.pid).find((p) => p.comm === 'sleep'));
    await waitFor('the app to exit', () => !runtime.isAlive(handle));
    await waitFor('its child to be killed', () => !isRunning(child), 3000);
  });

  it('waitHealthy rejects early when the app crashes on start', async () => {
    const { handle, port } = await startApp({ APP_MODE: 'crash' });
    const begun = Date.now();
    await expect(
      runtime.waitHealthy({ host: '127.0.0.1', handle, port, path: '/health', timeoutMs: 30_000 }),
    ).rejects.toThrow(/exited before/);
    expect(Date.now() - begun).toBeLessThan(5000);
    expect(readFileSync(handle.stderrPath, 'utf8')).toContain('app stderr line');
  });

  it('waitHealthy rejects on timeout when the app never listens, over HTTP and TCP', async () => {
    const { handle, port } = await startApp({ APP_MODE: 'no-listen' });
    for (const probePath of ['/health', undefined]) {
      const begun = Date.now();
      await expect(
        runtime.waitHealthy({ host: '127.0.0.1', handle, port, path: probePath, timeoutMs: 1200 }),
      ).rejects.toThrow(/not healthy within 1200 ms/);
      expect(Date.now() - begun).toBeGreaterThanOrEqual(1200);
      expect(Date.now() - begun).toBeLessThan(3000);
    }
    expect(runtime.isAlive(handle)).toBe(true);
  });

  it('refuses a workDir outside the app dir', async () => {
    const spec = instanceSpec({});
    await expect(runtime.start({ ...spec, sandbox: { ...spec.sandbox, workDir: '../..' } })).rejects.toThrow(
      /outside the app dir/,
    );
  });

  it('keeps instances running when Slipway exits; a new Slipway finds and stops them', async () => {
    const port = await runtime.instancePort();
    const spec = instanceSpec({ PORT: String(port) });
    // Another node process plays Slipway: it starts the instance and exits.
    const slipway = await run(
      {
        file: process.execPath,
        args: ['--import', 'tsx', path.join(FIXTURES, 'start-instance.ts'), dataDir, JSON.stringify(spec)],
        cwd: REPO_ROOT,
      },
      { timeoutMs: 30_000 },
    );
    expect(slipway.exitCode, slipway.output).toBe(0);
    const { pid, startTime } = JSON.parse(
      readFileSync(path.join(spec.instanceDir, 'instance.json'), 'utf8'),
    ) as InstanceHandle;
    started.push({
      instanceId: spec.instanceId,
      pid,
      startTime,
      startedAt: new Date(),
      address: '127.0.0.1',
      stdoutPath: '',
      stderrPath: '',
    });

    const restarted = await createLocalRuntime({ dataDir, network: 'shared' });
    expect(restarted.isAlive({ pid, startTime })).toBe(true);
    await restarted.waitHealthy({
      host: '127.0.0.1',
      handle: { pid, startTime },
      port,
      path: '/health',
      timeoutMs: 10_000,
    });
    await restarted.stop({ pid, startTime }, 2000);
    expect(restarted.isAlive({ pid, startTime })).toBe(false);
    expect(readFileSync(path.join(spec.instanceDir, 'stdout.log'), 'utf8')).toContain('app starting (serve)');
  });
});

describe('local runtime builds', () => {
  function buildDir(): string {
    const dir = mkdtempSync(path.join(dataDir, 'build-'));
    writeFileSync(path.join(dir, 'source.txt'), 'source');
    return dir;
  }

  it('runs the build command sandboxed, with the build dir writable and the output captured', async () => {
    const dir = buildDir();
    const chunks: string[] = [];
    const result = await runtime.build({
      dir,
      command: `echo building; id -u > whoami.txt; cat source.txt > copy.txt; cat ${secretKey} || echo no-secret; node -e "console.error('node ' + process.version)"`,
      env: { PATH: APP_PATH },
      timeoutMs: 20_000,
      onOutput: (chunk) => chunks.push(chunk),
      limits: LIMITS,
    });
    expect(result.exitCode, result.output).toBe(0);
    // stdout and stderr are separate pipes: lines interleave, but each arrives whole.
    expect(result.output.split('\n')).toEqual(
      expect.arrayContaining(['building', 'no-secret', expect.stringMatching(/^node v\d+/)]),
    );
    expect(result.output).not.toContain('top secret');
    expect(chunks.join('')).toBe(result.output);
    expect(readFileSync(path.join(dir, 'copy.txt'), 'utf8')).toBe('source');
    if (IS_ROOT) expect(readFileSync(path.join(dir, 'whoami.txt'), 'utf8')).toBe('65534\n');
  });

  it('enforces the build timeout, killing everything the build started', async () => {
    const begun = Date.now();
    const result = await runtime.build({
      dir: buildDir(),
      command: 'sleep 966 & sleep 965',
      env: { PATH: APP_PATH },
      timeoutMs: 500,
      limits: LIMITS,
    });
    expect(result.timedOut).toBe(true);
    expect(Date.now() - begun).toBeLessThan(3500);
    await waitFor(
      'the build processes to be gone',
      () => runningWithArgs(['sleep', '966']).length + runningWithArgs(['sleep', '965']).length === 0,
      3000,
    );
  });
});
