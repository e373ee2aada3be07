import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from './process.js';

/** The real binary, as `npm install` links it into node_modules/.bin. */
export const CLI_BIN = path.join(REPO_ROOT, 'cli/bin/slipway.js');

/** Compiles the CLI (cli/dist), as the root's `prepare` does on `npm install`: a test runs what users run. */
export function buildCli(): void {
  execFileSync(path.join(REPO_ROOT, 'node_modules/.bin/tsc'), ['-p', path.join(REPO_ROOT, 'cli/tsconfig.json')], {
    stdio: 'inherit',
  });
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  input?: string;
  timeoutMs?: number;
}

/** The environment of a run: the context file given, nothing inherited that changes the CLI's behaviour. */
export function cliEnv(configFile: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, SLIPWAY_CONFIG: configFile, ...extra };
  for (const key of ['SLIPWAY_API_KEY', 'SLIPWAY_URL', 'NO_COLOR', 'FORCE_COLOR']) if (!(key in extra)) delete env[key];
  for (const [key, value] of Object.entries(extra)) if (value === undefined) delete env[key];
  return env;
}

/** Runs `slipway …` with piped stdio (no terminal) to its end. */
export function runCli(configFile: string, args: string[], options: CliOptions = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    cwd: options.cwd,
    env: cliEnv(configFile, options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return collect(child, options);
}

/** Runs `slipway …` in a pseudo-terminal (util-linux's `script`): its stdout and stderr as a person sees them. */
export function runCliInTerminal(configFile: string, args: string[], options: CliOptions = {}): Promise<CliResult> {
  const command = [process.execPath, CLI_BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qefc', command, '/dev/null'], {
    cwd: options.cwd,
    env: { ...cliEnv(configFile, options.env), TERM: 'xterm-256color' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return collect(child, options);
}

function collect(child: ChildProcess, options: CliOptions): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
  child.stdin!.end(options.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const running = new Set<ChildProcess>();

/** Kills what startCli started and is still running (a test that timed out never stopped its `logs -f`). */
export function killStartedCli(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

/** A long-running `slipway …` (logs -f): its output so far, and a way to end it. */
export function startCli(configFile: string, args: string[], options: CliOptions = {}) {
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    cwd: options.cwd,
    env: cliEnv(configFile, options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk));
  running.add(child);
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  void exited.then(() => running.delete(child));
  return {
    output,
    exited,
    stop: async () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}
