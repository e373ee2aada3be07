/**
 * Datastore provisioning speed: POST -> `available` through the API for Postgres (`local` and
 * `cluster`) and key-value (`local`), median of N, each against a baseline measured in the same
 * run (the same server started by hand: initdb + postgres, CREATE ROLE/DATABASE, redis-server);
 * and the memory of an idle local Postgres and key-value server.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { findPostgresInstalls } from '../src/provisioners/postgres/binaries.js';
import { findKeyValueServer } from '../src/provisioners/keyvalue/local.js';
import {
  freePort,
  log,
  median,
  signUp,
  sleep,
  startSlipway,
  table,
  type BenchCaller,
  type RunningSlipway,
} from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const RUNS = SMOKE ? 2 : 10;
const ADMIN_PG = process.env.BENCH_POSTGRES_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Datastores not yet deleted through the API: killed if the bench dies (they outlive Slipway by design). */
const created = new Set<string>();
process.on('exit', () => {
  for (const id of created) {
    try {
      process.kill(serverPid(id), 'SIGKILL');
    } catch {
      /* gone */
    }
  }
});

/** POST -> available, in ms, for each of `RUNS` datastores; all deleted afterwards. Returns the times and the last one's pid. */
async function provisionTimes(call: BenchCaller, base: '/v1/postgres' | '/v1/key-value', keep = false) {
  const times: number[] = [];
  const ids: string[] = [];
  const track = (id: string) => (ids.push(id), created.add(id));
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    const { id } = await call('POST', base, { name: `bench ${i}`, plan: 'starter' });
    track(id);
    for (;;) {
      const { status } = await call('GET', `${base}/${id}`);
      if (status === 'available') break;
      await sleep(10);
    }
    times.push(performance.now() - started);
  }
  const kept = keep ? ids.pop() : undefined;
  for (const id of ids) {
    await call('DELETE', `${base}/${id}`);
    created.delete(id);
  }
  return { times, kept };
}

/** Resident memory (kB) of a process and all its descendants. */
function treeRssKb(root: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      /* gone */
    }
  }
  let total = 0;
  for (const queue = [root]; queue.length;) {
    const pid = queue.shift()!;
    try {
      total += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      /* gone */
    }
    queue.push(...(children.get(pid) ?? []));
  }
  return total;
}

async function waitFor(check: () => Promise<boolean>) {
  for (;;) {
    if (await check().catch(() => false)) return;
    await sleep(10);
  }
}

/** Baselines: the same servers brought up by hand, as fast as their own tools allow. */
const asNobody = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--'] : [];
async function bareLocalPostgres(): Promise<number> {
  const install = [...findPostgresInstalls().values()].pop()!;
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-pg-'));
  spawnSync('chown', ['65534:65534', dir]);
  const port = await freePort();
  const started = performance.now();
  const [cmd, ...args] = [...asNobody, install.initdb, '-D', `${dir}/data`, '-U', 'bench', '-A', 'trust', '-N'];
  spawnSync(cmd!, args, { stdio: 'ignore' });
  const [pcmd, ...pargs] = [
    ...asNobody,
    install.postgres,
    '-D',
    `${dir}/data`,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
  ];
  const server = spawn(pcmd!, pargs, { stdio: 'ignore' });
  await waitFor(async () => {
    const c = new pg.Client({ host: '127.0.0.1', port, user: 'bench', database: 'postgres' });
    await c.connect();
    await c.end();
    return true;
  });
  const ms = performance.now() - started;
  server.kill('SIGINT');
  await new Promise((r) => server.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
  return ms;
}
async function bareCluster(): Promise<number> {
  const admin = new pg.Client({ connectionString: ADMIN_PG });
  await admin.connect();
  const name = `bench_${Date.now()}`;
  const started = performance.now();
  await admin.query(`create role ${name} login password 'x'`);
  await admin.query(`create database ${name} owner ${name}`);
  const ms = performance.now() - started;
  await admin.query(`drop database ${name}`);
  await admin.query(`drop role ${name}`);
  await admin.end();
  return ms;
}
async function bareRedis(): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const server = spawn(
    findKeyValueServer()!,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  await waitFor(async () => {
    const r = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => undefined); // refused until it listens
    try {
      await r.connect();
      return (await r.ping()) === 'PONG';
    } finally {
      r.disconnect();
    }
  });
  const ms = performance.now() - started;
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  return ms;
}

async function main() {
  const env = { SLIPWAY_DATASTORE_CHECK_MS: '1000', SLIPWAY_ROUTER_PORT: '0' };
  const local = await startSlipway(env);
  let cluster: RunningSlipway | undefined;
  try {
    cluster = await startSlipway({ ...env, SLIPWAY_POSTGRES_ADMIN_URL: ADMIN_PG });
    const { call } = await signUp(local.url);
    const pgLocal = await provisionTimes(call, '/v1/postgres', true);
    const kvLocal = await provisionTimes(call, '/v1/key-value', true);
    const pgCluster = await provisionTimes((await signUp(cluster.url)).call, '/v1/postgres');
    await sleep(2000); // idle, connections closed
    const pgRssKb = treeRssKb(serverPid(pgLocal.kept!));
    const kvRssKb = treeRssKb(serverPid(kvLocal.kept!));
    await call('DELETE', `/v1/postgres/${pgLocal.kept}`);
    await call('DELETE', `/v1/key-value/${kvLocal.kept}`);
    created.clear();

    const baseline = { pgLocal: [] as number[], pgCluster: [] as number[], kvLocal: [] as number[] };
    for (let i = 0; i < Math.min(RUNS, 5); i++) {
      baseline.pgLocal.push(await bareLocalPostgres());
      baseline.pgCluster.push(await bareCluster());
      baseline.kvLocal.push(await bareRedis());
    }
    const row = (name: string, times: number[], base: number[], target: number) => {
      const m = median(times);
      return {
        name,
        medianMs: Math.round(m),
        baselineMs: Math.round(median(base)),
        ratio: Number((m / median(base)).toFixed(2)),
        targetMs: target,
      };
    };
    const results = [
      row('postgres local', pgLocal.times, baseline.pgLocal, 3000),
      row('postgres cluster', pgCluster.times, baseline.pgCluster, 300),
      row('key-value local', kvLocal.times, baseline.kvLocal, 500),
    ];
    log(
      table(
        ['create -> available', 'median ms', 'by hand ms', 'ratio', 'target ms'],
        results.map((r) => [r.name, r.medianMs, r.baselineMs, r.ratio, `<= ${r.targetMs}`]),
      ),
    );
    log(
      table(
        ['idle memory', 'RSS MiB'],
        [
          ['postgres local (process tree)', (pgRssKb / 1024).toFixed(1)],
          ['key-value local', (kvRssKb / 1024).toFixed(1)],
        ],
      ),
    );
    console.log(
      JSON.stringify({
        bench: 'datastores',
        smoke: SMOKE,
        runs: RUNS,
        results,
        idleRssKb: { postgresLocal: pgRssKb, keyValueLocal: kvRssKb },
      }),
    );
    if (!SMOKE && results.some((r) => r.medianMs > r.targetMs)) process.exitCode = 1;
  } finally {
    await local.stop();
    await cluster?.stop();
  }
}

/** The top process whose command line or working dir names the datastore (its data dir holds the id). */
function serverPid(id: string): number {
  const found = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cwd = (() => {
        try {
          return readlinkSync(`/proc/${entry}/cwd`);
        } catch {
          return '';
        }
      })();
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(id) && !cwd.includes(id)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      found.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const top = [...found].find(([, ppid]) => !found.has(ppid));
  if (!top) throw new Error(`no process found for ${id}`);
  return top[0];
}

await main();
