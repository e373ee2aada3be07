/**
 * `npm start` as a user meets it (issue 12): a copy of the repository's files, the compile `npm install` runs (the
 * prepare script), then `npm start` until GET /api/health answers 200 on a fresh data dir, and again on the same
 * one. bench/builds.ts imports measureNpmStart; run this file to print the figures alone (`node --import tsx
 * bench/start-timing.ts [git ref]`: a commit's instead of the worktree's). It is not in `npm run
 * bench`'s list (bench/run.ts), so the compile and the two starts are not measured twice.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_NETWORK_CIDR } from '../src/app/config.js';
import { findProgram } from '../src/runtime/local/capabilities.js';
import { removeNetworksOf } from '../src/runtime/local/network/index.js';
import { stopNginx } from '../src/router/nginx/index.js';
import { killProcessesUnder } from '../test/helpers/kill-under.js';
import { freePort, log, repoRoot, sleep, table } from './lib.js';

export interface NpmStartTiming {
  /** `npm run prepare` (what `npm install` runs) in a fresh copy: the full compile. */
  compileMs: number;
  /** `npm start` to the first 200 from GET /api/health, on an empty data dir. */
  firstStartMs: number;
  /** The same on the data dir the first start left. */
  secondStartMs: number;
}

/** Issue 12's targets on a 2-core machine. */
export const TARGETS = { firstStartMs: 10_000, secondStartMs: 5_000 };

// Process groups of `npm start` still running if this dies mid-way: killed on exit.
const groups = new Set<number>();
process.on('exit', () => {
  for (const pgid of groups) signalGroup(pgid, 'SIGKILL');
});

function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // no process left in the group
  }
}

/**
 * The repository's files as a checkout has them (tracked, plus new ones git does not ignore), or as commit `ref` has
 * them; node_modules is this checkout's.
 */
function copyRepo(to: string, ref: string | undefined) {
  if (ref) {
    if (!/^[\w./^~-]+$/.test(ref)) throw new Error(`not a git ref: ${ref}`);
    mkdirSync(to);
    execFileSync('sh', ['-c', `git archive '${ref}' | tar -x -C '${to}'`], { cwd: repoRoot });
  } else copyWorktree(to);
  symlinkSync(realpathSync(path.join(repoRoot, 'node_modules')), path.join(to, 'node_modules'));
}

function copyWorktree(to: string) {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: repoRoot,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((f) => f && f !== 'node_modules' && !f.startsWith('node_modules/'));
  for (const file of new Set(files)) {
    try {
      cpSync(path.join(repoRoot, file), path.join(to, file), { verbatimSymlinks: true });
    } catch (err) {
      // Deleted in the worktree but still in the index: a checkout of the worktree would not have it either.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/** Runs `npm <args>` in `cwd` to completion; its wall time in ms. */
async function timedNpm(args: string[], cwd: string): Promise<number> {
  const started = performance.now();
  const child = spawn('npm', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`npm ${args.join(' ')} exited with ${code}:\n${output}`);
  return performance.now() - started;
}

/** `npm start` in `cwd` until GET /api/health answers 200 (its wall time in ms), then SIGTERM and wait for every process of it to exit. */
async function timedStart(cwd: string, dataDir: string): Promise<number> {
  const port = await freePort();
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('SLIPWAY_') && k !== 'DATABASE_URL'),
  );
  const started = performance.now();
  // A process group of its own: npm, its shell and Slipway are stopped together, as Ctrl-C in a terminal would.
  const child: ChildProcess = spawn('npm', ['start'], {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...env,
      SLIPWAY_DATA_DIR: dataDir,
      SLIPWAY_HOST: '127.0.0.1',
      SLIPWAY_PORT: String(port),
      SLIPWAY_ROUTER_PORT: String(await freePort()),
      SLIPWAY_ROUTER_HTTPS_PORT: '0',
    },
  });
  const pgid = child.pid!;
  groups.add(pgid);
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
      const ok = await fetch(`http://127.0.0.1:${port}/api/health`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return performance.now() - started;
      if (Date.now() > deadline) throw new Error(`no 200 from /api/health within 120 s:\n${output}`);
      await sleep(25);
    }
  } finally {
    signalGroup(pgid, 'SIGTERM');
    const until = Date.now() + 15_000;
    while (signalGroup(pgid, 0) && Date.now() < until) await sleep(50);
    signalGroup(pgid, 'SIGKILL');
    while (signalGroup(pgid, 0)) await sleep(50);
    groups.delete(pgid);
  }
}

/** `ref`: measure that commit instead of the worktree (e.g. one from before `npm install` compiled: compileMs is then 0). */
export async function measureNpmStart(options: { ref?: string } = {}): Promise<NpmStartTiming> {
  const work = mkdtempSync(path.join(tmpdir(), 'slipway-start-timing-'));
  const repo = path.join(work, 'repo');
  const dataDir = path.join(work, 'data');
  try {
    log('start-timing: copying the repository');
    copyRepo(repo, options.ref);
    const { scripts } = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    log('start-timing: npm run prepare (what npm install runs)');
    const compileMs = scripts.prepare ? await timedNpm(['run', 'prepare'], repo) : 0;
    mkdirSync(dataDir);
    log('start-timing: npm start, fresh data dir');
    const firstStartMs = await timedStart(repo, dataDir);
    log('start-timing: npm start again');
    const secondStartMs = await timedStart(repo, dataDir);
    return { compileMs, firstStartMs, secondStartMs };
  } finally {
    // Nothing was deployed; this is in case a start left a namespace or a process behind. nginx is stopped first:
    // killed with its master alone, its workers would go on.
    await stopNginx(dataDir);
    killProcessesUnder(dataDir);
    await removeNetworksOf(dataDir, DEFAULT_NETWORK_CIDR, findProgram);
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const timing = await measureNpmStart({ ref: process.argv[2] });
  const verdict = (ms: number, target: number) => `<= ${target / 1000} s: ${ms <= target ? 'met' : 'missed'}`;
  console.log(
    table(
      ['step', 'ms', 'target'],
      [
        ['npm run prepare (npm install)', Math.round(timing.compileMs), ''],
        [
          'npm start, first (empty data dir)',
          Math.round(timing.firstStartMs),
          verdict(timing.firstStartMs, TARGETS.firstStartMs),
        ],
        ['npm start, again', Math.round(timing.secondStartMs), verdict(timing.secondStartMs, TARGETS.secondStartMs)],
      ],
    ),
  );
  console.log(JSON.stringify({ bench: 'start-timing', ...timing }));
}
