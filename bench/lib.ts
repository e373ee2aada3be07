/** Shared helpers for the benchmarks: a Slipway child process, a signed-in caller, fixture archives, percentiles, a table printer. */
import { sweepBuildDisks } from '../src/runtime/local/build-disks.js';
import { stopNginx } from '../src/router/nginx/index.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import * as tar from 'tar';
import { DEFAULT_NETWORK_CIDR, loadConfig } from '../src/app/config.js';
import { findProgram } from '../src/runtime/local/capabilities.js';
import { removeNetworksOf } from '../src/runtime/local/network/index.js';
import { killProcessesUnder } from '../test/helpers/kill-under.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Progress goes to stderr so stdout carries only the table and the JSON line (docs/architecture.md, "Benchmarks"). */
export const log = (message: string) => process.stderr.write(`${message}\n`);

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The value at percentile `p` (nearest rank). */
export const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[
    Math.min(values.length - 1, Math.max(0, Math.ceil((p / 100) * values.length) - 1))
  ]!;
export const median = (values: number[]) => percentile(values, 50);

/** A fixture app of test/fixtures/apps as the .tgz a user would upload, with `extra` files added or replaced. */
export async function fixtureArchive(name: string, extra: Record<string, string> = {}): Promise<Buffer> {
  const dir = mkdtempSync(path.join(tmpdir(), `slipway-bench-${name}-`));
  cpSync(path.join(repoRoot, 'test/fixtures/apps', name), dir, { recursive: true });
  for (const [file, content] of Object.entries(extra)) writeFileSync(path.join(dir, file), content);
  await tar.c({ gzip: true, cwd: dir, file: `${dir}.tgz`, portable: true }, ['.']);
  const data = readFileSync(`${dir}.tgz`);
  rmSync(dir, { recursive: true, force: true });
  rmSync(`${dir}.tgz`);
  return data;
}

/**
 * Registers a new user on the Slipway at `url`: its session headers, its workspace, and a
 * JSON caller that throws on an error status (`raw` sends a .tgz body instead).
 */
export async function signUp(url: string) {
  const register = await fetch(`${url}/v1/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      email: `bench-${randomBytes(6).toString('hex')}@example.com`,
      password: 'correct horse battery',
      name: 'Bench',
    }),
  });
  const cookie = /slipway_session=([^;]+)/.exec(register.headers.get('set-cookie') ?? '')![1]!;
  const { workspace } = (await register.json()) as { workspace: { id: string } };
  const headers = { cookie: `slipway_session=${cookie}`, 'x-requested-with': 'bench' };
  return { headers, workspaceId: workspace.id, call: callerFor(url, headers) };
}

/** A JSON caller of the Slipway at `url` with these session headers (a signUp's, again after a restart on a new port). */
export function callerFor(url: string, headers: Record<string, string>) {
  return async (method: string, path: string, body?: unknown, raw?: Buffer) => {
    const contentType: Record<string, string> = raw
      ? { 'content-type': 'application/gzip' }
      : body !== undefined
        ? { 'content-type': 'application/json' }
        : {};
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { ...headers, ...contentType },
      body: (raw ?? (body === undefined ? undefined : JSON.stringify(body))) as BodyInit | undefined,
    });
    const json = await res.json().catch(() => undefined);
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json as any;
  };
}
export type BenchCaller = Awaited<ReturnType<typeof signUp>>['call'];

/** A web service of the node-web fixture in `call`'s workspace, from an upload, live: it and its first deploy's id. */
export async function liveFixtureService(call: BenchCaller, name: string, pollMs = 20) {
  const { service } = await call('POST', '/v1/services', {
    type: 'web_service',
    name,
    serviceDetails: { runtime: 'node', healthCheckPath: '/healthz', numInstances: 1 },
  });
  const first = await call(
    'POST',
    `/v1/services/${service.id}/source/upload`,
    undefined,
    await fixtureArchive('node-web'),
  );
  await waitLive(call, service.id, first.deployId, pollMs);
  return { service: service as { id: string; slug: string }, deployId: first.deployId as string };
}

/** Polls a deploy until it is live; throws when it ends any other way. */
export async function waitLive(call: BenchCaller, serviceId: string, deployId: string, pollMs = 20): Promise<void> {
  for (;;) {
    const d = await call('GET', `/v1/services/${serviceId}/deploys/${deployId}`);
    if (d.status === 'live') return;
    if (['build_failed', 'update_failed', 'canceled', 'pre_deploy_failed'].includes(d.status))
      throw new Error(`deploy ${deployId} ended ${d.status}: ${d.failureReason}`);
    await sleep(pollMs);
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The config of a Slipway a bench starts in its own process (on free ports, PGlite unless `extra` says otherwise). */
export const inProcessConfig = (dataDir: string, extra: Record<string, string> = {}) =>
  loadConfig({
    SLIPWAY_DATA_DIR: dataDir,
    SLIPWAY_PORT: '0',
    SLIPWAY_ROUTER_PORT: '0',
    SLIPWAY_ROUTER_HTTPS_PORT: '0',
    DATABASE_URL: '',
    ...extra,
  });

export interface RunningSlipway {
  url: string;
  pid: number;
  dataDir: string;
  /** Stops the child (SIGTERM, then SIGKILL) and removes its temp data dir (not one the caller passed). Safe to call twice. */
  stop(): Promise<void>;
  /** The last 4,000 characters it printed (what a bench shows when the server failed under it). */
  output(): string;
}

// Children still running if the bench dies mid-way (an uncaught error, Ctrl-C): killed and
// their data dirs removed on exit, so none are left behind even when finally blocks do not run.
const live = new Map<ChildProcess, string>();
process.on('exit', () => {
  for (const [child, dataDir] of live) {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
/** The stops of the Slipways still running: a bench interrupted stops them in full (nginx, apps, namespaces) first. */
const stops = new Set<() => Promise<void>>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(
    signal,
    () => void Promise.allSettled([...stops].map((stop) => stop())).finally(() => process.exit(130)),
  );
}

/**
 * Starts Slipway as its own process (so the load generator does not share its event loop),
 * with a temp data dir and limits raised so rate limiting does not shape the numbers.
 */
export async function startSlipway(
  extraEnv: Record<string, string> = {},
  options: { dataDir?: string } = {},
): Promise<RunningSlipway> {
  // A port freePort() found free can be taken before Slipway binds it (an outgoing connection's ephemeral port, in a
  // CI run on a busy machine): such a start is tried again, on new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(extraEnv, options);
    } catch (err) {
      if (attempt >= 3 || !/EADDRINUSE/.test((err as Error).message)) throw err;
      log(`slipway's port was taken before it bound it; starting again (attempt ${attempt + 1})`);
    }
  }
}

async function startOnce(extraEnv: Record<string, string>, options: { dataDir?: string }): Promise<RunningSlipway> {
  // A data dir the caller passes outlives this child (a restart on the same store); the caller removes it.
  const dataDir = options.dataDir ?? mkdtempSync(path.join(tmpdir(), 'slipway-bench-'));
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: '',
    SLIPWAY_DATA_DIR: dataDir,
    SLIPWAY_HOST: '127.0.0.1',
    SLIPWAY_PORT: String(port),
    SLIPWAY_ROUTER_HTTPS_PORT: '0',
    SLIPWAY_LOG_LEVEL: 'warn',
    SLIPWAY_RATE_LIMIT_PER_MINUTE: '100000000',
    SLIPWAY_AUTH_RATE_LIMIT_PER_MINUTE: '100000',
    SLIPWAY_AUTH_ACCOUNT_ATTEMPTS_PER_10_MINUTES: '100000',
    ...extraEnv,
  };
  // BENCH_NODE_ARGS: extra node flags for the server only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it).
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/main.ts'], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.set(child, dataDir);
  // Keep the tail of its output: it is the only clue when the server fails to start.
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', () => live.delete(child));

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    stops.delete(stop);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    // Apps (and SLIPWAY_ROUTER=nginx's nginx) outlive Slipway, and their namespaces are machine-wide: a bench that
    // failed mid-way did not delete its services.
    await stopNginx(dataDir);
    killProcessesUnder(dataDir);
    await sweepBuildDisks(dataDir); // a build's disk stays mounted when Slipway is killed during it
    await removeNetworksOf(dataDir, DEFAULT_NETWORK_CIDR, findProgram);
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };

  stops.add(stop);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(url, child, () => output);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, pid: child.pid!, dataDir, stop, output: () => output };
}

async function waitForHealth(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`slipway exited with ${child.exitCode} before it was healthy:\n${output()}`);
    const ok = await fetch(`${url}/api/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`slipway was not healthy within 60 s:\n${output()}`);
}

/** Runs `work` over `items` with at most `limit` in flight. */
export async function pool<T>(
  items: T[],
  limit: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** A plain aligned table; numbers right-aligned. */
export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[], isHeader: boolean) =>
    r
      .map((c, i) => (isHeader || typeof rows[0]?.[i] !== 'number' ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [
    line(headers, true),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...cells.slice(1).map((r) => line(r, false)),
  ].join('\n');
}

/** A throwaway database on the local Postgres; undefined when none answers. */
export async function createDatabase(
  adminUrl = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test',
): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (err) {
    log(`postgres at ${adminUrl} unreachable: ${(err as Error).message}`);
    return undefined;
  }
  const name = `slipway_bench_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      // FORCE: a pool the child left open must not keep the database alive.
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => admin.end());
    },
  };
}
