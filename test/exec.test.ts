import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { run, spawnDetached } from '../src/lib/exec.js';

const sh = (script: string, env: Record<string, string> = { PATH: '/usr/bin:/bin' }) => ({
  file: '/bin/sh',
  args: ['-c', script],
  env,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Pids of live processes whose command line is exactly `argv` (unique sleep durations mark a test's processes). */
function processesRunning(argv: string[]): number[] {
  const wanted = argv.join('\0') + '\0';
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
        return state !== 'Z' && readFileSync(`/proc/${pid}/cmdline`, 'utf8') === wanted;
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function waitUntilGone(argv: string[], ms = 3000): Promise<number[]> {
  const deadline = Date.now() + ms;
  while (processesRunning(argv).length > 0 && Date.now() < deadline) await sleep(50);
  return processesRunning(argv);
}

describe('run', () => {
  it('returns the exit code and the interleaved stdout+stderr, and passes chunks to onOutput', async () => {
    const chunks: string[] = [];
    const result = await run(sh('echo out; sleep 0.1; echo err >&2; sleep 0.1; echo out2; exit 3'), {
      onOutput: (c) => chunks.push(c),
    });
    expect(result).toEqual({ exitCode: 3, signal: null, timedOut: false, canceled: false, output: 'out\nerr\nout2\n' });
    expect(chunks.join('')).toBe(result.output);
  });

  it('gives the program exactly the env of the command, in its cwd', async () => {
    process.env.SLIPWAY_EXEC_TEST_MARKER = 'leak';
    try {
      const result = await run({ ...sh('env; pwd', { ONLY: 'this' }), cwd: '/usr' });
      expect(result.output).toContain('ONLY=this\n');
      expect(result.output).not.toContain('SLIPWAY_EXEC_TEST_MARKER');
      expect(result.output.trim().split('\n').at(-1)).toBe('/usr');
    } finally {
      delete process.env.SLIPWAY_EXEC_TEST_MARKER;
    }
  });

  it('on timeout kills the whole process group, children included', async () => {
    const started = Date.now();
    const result = await run(sh('sleep 979 & echo "child $!"; wait'), { timeoutMs: 400 });
    expect(result.timedOut).toBe(true);
    expect(result.canceled).toBe(false);
    expect(result.signal).toBe('SIGTERM');
    expect(result.output).toMatch(/^child \d+/);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await waitUntilGone(['sleep', '979'])).toEqual([]);
  });

  it('SIGKILLs the group 2 s after a SIGTERM it ignores', async () => {
    const started = Date.now();
    // trap '' is inherited, so the sleep ignores SIGTERM too.
    const result = await run(sh("trap '' TERM; sleep 978"), { timeoutMs: 200 });
    const elapsed = Date.now() - started;
    expect(result).toMatchObject({ timedOut: true, signal: 'SIGKILL' });
    expect(elapsed).toBeGreaterThanOrEqual(2150);
    expect(elapsed).toBeLessThan(4000);
    expect(await waitUntilGone(['sleep', '978'])).toEqual([]);
  });

  it('stops on abort, also when the signal is already aborted', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = Date.now();
    const result = await run(sh('sleep 977'), { signal: controller.signal });
    expect(result).toMatchObject({ canceled: true, timedOut: false, signal: 'SIGTERM' });
    expect(Date.now() - started).toBeLessThan(2000);

    const early = await run(sh('sleep 977'), { signal: AbortSignal.abort() });
    expect(early.canceled).toBe(true);
    expect(await waitUntilGone(['sleep', '977'])).toEqual([]);
  });

  it('keeps only the last maxOutputBytes of the output', async () => {
    const chunks: string[] = [];
    const result = await run(sh('i=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done'), {
      maxOutputBytes: 100,
      onOutput: (c) => chunks.push(c),
    });
    expect(Buffer.byteLength(result.output)).toBe(100);
    expect(result.output.endsWith('line 2999\n')).toBe(true);
    expect(chunks.join('')).toContain('line 0\n'); // onOutput still saw everything
  });

  it('kills what the program left running in its group when it exits', async () => {
    const started = Date.now();
    const result = await run(sh('sleep 976 & echo started'));
    expect(result.exitCode).toBe(0);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(await waitUntilGone(['sleep', '976'])).toEqual([]);
  });

  it('does not hang on a pipe held open by a process that left the group', async () => {
    const started = Date.now();
    const result = await run(sh('setsid sleep 975 & echo detached'));
    expect(result).toMatchObject({ exitCode: 0, output: 'detached\n' });
    expect(Date.now() - started).toBeLessThan(2500);
    for (const pid of processesRunning(['sleep', '975'])) process.kill(pid, 'SIGKILL');
  });

  it('rejects only when the program cannot be spawned', async () => {
    await expect(run({ file: '/nonexistent/program', args: [] })).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(run(sh('exit 1'))).resolves.toMatchObject({ exitCode: 1 });
  });

  it.skipIf(process.getuid?.() !== 0)('runs as the given uid/gid (needs root)', async () => {
    const result = await run({ ...sh('id -u; id -g'), uid: 65534, gid: 65534 });
    expect(result.output).toBe('65534\n65534\n');
  });
});

describe('the spawner', () => {
  const parentOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
  const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');

  it('starts programs from a small process of its own, not from this one (a fork here copies the whole heap)', async () => {
    const result = await run(sh('echo $PPID'));
    const parent = Number(result.output.trim());
    expect(parent).not.toBe(process.pid);
    expect(cmdline(parent)).toMatch(/spawner-host/);
    expect(parentOf(parent)).toBe(process.pid);
  });

  it('is started again when it died; a program it was running ends as killed', async () => {
    const spawner = Number((await run(sh('echo $PPID'))).output.trim());
    const running = run(sh('sleep 30'));
    await new Promise((r) => setTimeout(r, 200));
    process.kill(spawner, 'SIGKILL');
    await expect(running).resolves.toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    const again = Number((await run(sh('echo $PPID'))).output.trim());
    expect(again).not.toBe(spawner);
    expect(cmdline(again)).toMatch(/spawner-host/);
    for (const pid of processesRunning(['sleep', '30'])) process.kill(pid, 'SIGKILL');
  });

  it('leaves a detached program running when it dies, and reports no exit for it (the app stays routed)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-spawner-'));
    const exits: Array<number | null> = [];
    try {
      const pid = await spawnDetached(
        sh('exec sleep 31'),
        { stdoutPath: path.join(dir, 'out'), stderrPath: path.join(dir, 'err') },
        (code) => exits.push(code),
      );
      process.kill(parentOf(pid), 'SIGKILL'); // the spawner
      await new Promise((r) => setTimeout(r, 500));
      expect(() => process.kill(pid, 0)).not.toThrow();
      expect(exits).toEqual([]);
      process.kill(pid, 'SIGKILL');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('starts a detached program that outlives it, and reports its exit', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-spawner-'));
    try {
      const exited = new Promise<number | null>((resolve) => {
        void spawnDetached(
          sh('echo out; echo err >&2; exit 3'),
          {
            stdoutPath: path.join(dir, 'out'),
            stderrPath: path.join(dir, 'err'),
          },
          (code) => resolve(code),
        );
      });
      expect(await exited).toBe(3);
      expect(readFileSync(path.join(dir, 'out'), 'utf8')).toBe('out\n');
      expect(readFileSync(path.join(dir, 'err'), 'utf8')).toBe('err\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
