/**
 * API overhead: authenticated reads against an unauthenticated constant route in the same
 * Slipway process, on PGlite and Postgres. The store holds 1,000 API keys in 10 workspaces,
 * 100,000 audit entries, 1,000 services in one workspace and 10,000 deploys of one service,
 * so the list routes are measured as tables grow. The ratio (route req/s over baseline req/s)
 * is the figure to compare across machines. The lists are measured twice: as served (a page read
 * again comes from the read cache, src/core/read-cache.ts) and with the cache off, when every
 * request reads the store, as the first read after a write does.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { seedLists } from './api-seed.js';
import { createDatabase, log, pool, startSlipway, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const DURATION_S = SMOKE ? 2 : 10;
const CONNECTIONS = 50;
const WORKSPACES = 10;
const KEYS = SMOKE ? 100 : 1000;
const AUDIT_ENTRIES = SMOKE ? 5000 : 100_000;
const SERVICES = SMOKE ? 100 : 1000;
const DEPLOYS = SMOKE ? 1000 : 10_000;
const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test';

interface Seeded {
  token: string;
  workspaceIds: string[];
  serviceId: string;
}

const routesOf = (seeded: Seeded) =>
  [
    { name: 'baseline', path: '/v1/auth/providers', auth: false },
    { name: 'users', path: '/v1/users', auth: true },
    { name: 'audit-logs', path: '/v1/audit-logs?limit=20', auth: true },
    { name: 'services', path: '/v1/services?limit=20', auth: true },
    { name: 'deploys', path: `/v1/services/${seeded.serviceId}/deploys?limit=20`, auth: true },
  ] as const;

/** Issue 11's targets on a 2-core machine: a ratio floor per store, and p99 on Postgres for the lists. */
function targetOf(row: Row): string {
  if (row.route.includes('/v1/auth/providers') || row.cache === 'off') return '';
  const list = row.route.includes('limit=20');
  const floor = list ? (row.store === 'postgres' ? 0.25 : 0.1) : row.store === 'postgres' ? 0.5 : 0.3;
  const p99Ok = row.timeouts === 0 && (!list || row.store !== 'postgres' || row.p99Ms <= 50);
  return `>= ${floor}${list && row.store === 'postgres' ? ', p99 <= 50' : ''}: ${row.ratio >= floor && p99Ok ? 'met' : 'missed'}`;
}

interface Row {
  store: 'pglite' | 'postgres';
  /** Off: Slipway started with SLIPWAY_READ_CACHE_SECONDS=0, so every list request reads the store (no target). */
  cache: 'on' | 'off';
  route: string;
  reqPerSec: number;
  p99Ms: number;
  /** Requests unanswered within 10 s. */
  timeouts: number;
  ratio: number;
}

async function post(url: string, body: unknown, cookie?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (cookie) Object.assign(headers, { cookie: `slipway_session=${cookie}`, 'x-requested-with': 'bench' });
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

/** 10 users (each gets its own workspace), the keys spread evenly over them, and one service in the first. */
async function seedThroughApi(url: string): Promise<Seeded> {
  const cookies: string[] = [];
  const workspaceIds: string[] = [];
  await pool([...Array(WORKSPACES).keys()], WORKSPACES, async (i) => {
    const email = `bench-${i}-${randomBytes(4).toString('hex')}@example.com`;
    const res = await post(`${url}/v1/auth/register`, { email, password: 'correct horse battery', name: `Bench ${i}` });
    const cookie = /slipway_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1];
    if (res.status !== 201 || !cookie) throw new Error(`register failed: ${res.status} ${await res.text()}`);
    cookies[i] = cookie;
    workspaceIds[i] = ((await res.json()) as { workspace: { id: string } }).workspace.id;
  });
  const tokens: string[] = [];
  await pool([...Array(KEYS).keys()], 16, async (i) => {
    const res = await post(`${url}/v1/api-keys`, { name: `bench key ${i}` }, cookies[i % WORKSPACES]);
    const text = await res.text();
    if (res.status !== 201) throw new Error(`api key failed: ${res.status} ${text}`);
    tokens[i] = (JSON.parse(text) as { token: string }).token;
  });
  const res = await post(
    `${url}/v1/services`,
    { type: 'web_service', name: 'bench-app', serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' } },
    cookies[0],
  );
  const text = await res.text();
  if (res.status !== 201) throw new Error(`service failed: ${res.status} ${text}`);
  return { token: tokens[0]!, workspaceIds, serviceId: (JSON.parse(text) as { service: { id: string } }).service.id };
}

/** One request per route before measuring: a wrong status or page size here would make the numbers meaningless. */
async function checkRoutes(url: string, seeded: Seeded): Promise<void> {
  for (const route of routesOf(seeded)) {
    const res = await fetch(url + route.path, {
      headers: route.auth ? { authorization: `Bearer ${seeded.token}` } : {},
    });
    const body = (await res.json()) as unknown;
    if (res.status !== 200) throw new Error(`GET ${route.path} -> ${res.status} ${JSON.stringify(body)}`);
    if (route.path.includes('limit=20') && (!Array.isArray(body) || body.length !== 20)) {
      throw new Error(`GET ${route.path} returned ${Array.isArray(body) ? body.length : 'no'} entries, expected 20`);
    }
  }
}

/** Load without judging: the first second after a restart may still be busy starting up. */
async function warmUp(url: string, path: string, token: string | undefined): Promise<void> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  await autocannon({ url: url + path, connections: CONNECTIONS, duration: 2, headers });
}

async function measure(
  url: string,
  path: string,
  token: string | undefined,
  duration: number,
): Promise<autocannon.Result> {
  const result = await autocannon({
    url: url + path,
    connections: CONNECTIONS,
    duration,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  // A wrong answer makes the numbers meaningless; a request slower than autocannon's 10 s timeout is a figure
  // (the `timeouts` column): the route was that slow.
  if (result.non2xx > 0 || result['2xx'] === 0) {
    throw new Error(
      `GET ${path}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts of ${result.requests.total} requests`,
    );
  }
  return result;
}

async function benchStore(store: Row['store'], env: Record<string, string>): Promise<Row[]> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-api-'));
  try {
    log(`[${store}] seeding ${WORKSPACES} workspaces, ${KEYS} API keys and a service through the API`);
    const first = await startSlipway(env, { dataDir });
    const seeded = await seedThroughApi(first.url).finally(() => first.stop());
    log(`[${store}] writing ${AUDIT_ENTRIES} audit entries, ${SERVICES} services and ${DEPLOYS} deploys to the store`);
    await seedLists(
      { ...env, SLIPWAY_DATA_DIR: dataDir },
      { ...seeded, auditEntries: AUDIT_ENTRIES, services: SERVICES, deploys: DEPLOYS },
    );
    // BENCH_ROUTES=users,services measures only those (and the baseline), e.g. to profile one route.
    const only = process.env.BENCH_ROUTES?.split(',');
    const routes = routesOf(seeded).filter((r) => !only || r.name === 'baseline' || only.includes(r.name));
    const lists = routes.filter((r) => r.name === 'baseline' || r.path.includes('limit=20'));
    return [
      ...(await measureRoutes(store, 'on', env, dataDir, seeded, routes)),
      // The same pages read from the store on every request: what a page costs when a write has just dropped it.
      ...(await measureRoutes(store, 'off', { ...env, SLIPWAY_READ_CACHE_SECONDS: '0' }, dataDir, seeded, lists)),
    ];
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** `routes` (the baseline first) on a Slipway started on the seeded store, as ratios to that baseline. */
async function measureRoutes(
  store: Row['store'],
  cache: Row['cache'],
  env: Record<string, string>,
  dataDir: string,
  seeded: Seeded,
  routes: ReturnType<typeof routesOf>[number][],
): Promise<Row[]> {
  log(`[${store}] starting slipway on the seeded store, read cache ${cache}`);
  const slipway = await startSlipway(env, { dataDir });
  try {
    await checkRoutes(slipway.url, seeded);
    // A short warm-up so the first measured route does not pay for JIT and connection pools.
    if (!SMOKE)
      for (const route of routes) await warmUp(slipway.url, route.path, route.auth ? seeded.token : undefined);
    const rows: Row[] = [];
    for (const route of routes) {
      log(`[${store}] GET ${route.path}: ${CONNECTIONS} connections for ${DURATION_S} s`);
      const r = await measure(slipway.url, route.path, route.auth ? seeded.token : undefined, DURATION_S);
      rows.push({
        store,
        cache,
        route: `GET ${route.path.replace(seeded.serviceId, ':id')}`,
        reqPerSec: Math.round(r.requests.average),
        p99Ms: r.latency.p99,
        timeouts: r.timeouts + r.errors,
        ratio: 0,
      });
    }
    const baseline = rows[0]!.reqPerSec;
    for (const row of rows) row.ratio = Math.round((row.reqPerSec / baseline) * 1000) / 1000;
    return rows;
  } finally {
    await slipway.stop();
  }
}

async function main() {
  const rows: Row[] = [];
  const skipped: string[] = [];
  // BENCH_STORES=postgres measures one store only.
  const stores = process.env.BENCH_STORES?.split(',') ?? ['pglite', 'postgres'];
  if (stores.includes('pglite')) rows.push(...(await benchStore('pglite', {})));
  const db = stores.includes('postgres') ? await createDatabase(POSTGRES_ADMIN_URL) : undefined;
  if (!db) skipped.push('postgres');
  else {
    try {
      rows.push(...(await benchStore('postgres', { DATABASE_URL: db.url })));
    } finally {
      await db.drop();
    }
  }

  console.log(
    `\napi: ${CONNECTIONS} connections, ${DURATION_S} s per route, ${KEYS} API keys in ${WORKSPACES} workspaces, ` +
      `${AUDIT_ENTRIES} audit entries, ${SERVICES} services, ${DEPLOYS} deploys of one service${SMOKE ? ' (smoke)' : ''}`,
  );
  console.log(
    table(
      ['store', 'cache', 'route', 'req/s', 'p99 ms', 'timeouts', 'ratio', 'target'],
      rows.map((r) => [r.store, r.cache, r.route, r.reqPerSec, r.p99Ms, r.timeouts, r.ratio, targetOf(r)]),
    ),
  );
  for (const store of skipped) console.log(`${store}: skipped (unreachable at ${POSTGRES_ADMIN_URL})`);
  console.log(
    JSON.stringify({
      bench: 'api',
      smoke: SMOKE,
      connections: CONNECTIONS,
      durationSeconds: DURATION_S,
      apiKeys: KEYS,
      workspaces: WORKSPACES,
      auditEntries: AUDIT_ENTRIES,
      services: SERVICES,
      deploys: DEPLOYS,
      results: rows,
      skipped,
    }),
  );
}

main().catch((err: Error) => {
  console.error(`bench api failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
