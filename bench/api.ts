/**
 * API overhead: authenticated reads against an unauthenticated constant route in the same
 * Slipway process, with 1,000 API keys and 10 workspaces in the store, on PGlite and Postgres.
 * The ratio (route req/s over baseline req/s) is the figure to compare across machines.
 */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import pg from 'pg';
import { log, pool, startSlipway, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const DURATION_S = SMOKE ? 2 : 10;
const CONNECTIONS = 50;
const WORKSPACES = 10;
const KEYS = SMOKE ? 100 : 1000;
const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test';

const ROUTES = [
  { name: 'baseline', path: '/v1/auth/providers', auth: false },
  { name: 'users', path: '/v1/users', auth: true },
  { name: 'audit-logs', path: '/v1/audit-logs?limit=20', auth: true },
] as const;

interface Row {
  store: 'pglite' | 'postgres';
  route: string;
  reqPerSec: number;
  p99Ms: number;
  ratio: number;
}

async function post(url: string, body: unknown, cookie?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (cookie) Object.assign(headers, { cookie: `slipway_session=${cookie}`, 'x-requested-with': 'bench' });
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

/** 10 users (each gets its own workspace), then the keys spread evenly over them; returns one key. */
async function seed(url: string): Promise<string> {
  const cookies: string[] = [];
  await pool([...Array(WORKSPACES).keys()], WORKSPACES, async (i) => {
    const email = `bench-${i}-${randomBytes(4).toString('hex')}@example.com`;
    const res = await post(`${url}/v1/auth/register`, { email, password: 'correct horse battery', name: `Bench ${i}` });
    const cookie = /slipway_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1];
    if (res.status !== 201 || !cookie) throw new Error(`register failed: ${res.status} ${await res.text()}`);
    cookies[i] = cookie;
  });
  const tokens: string[] = [];
  await pool([...Array(KEYS).keys()], 16, async (i) => {
    const res = await post(`${url}/v1/api-keys`, { name: `bench key ${i}` }, cookies[i % WORKSPACES]);
    const text = await res.text();
    if (res.status !== 201) throw new Error(`api key failed: ${res.status} ${text}`);
    tokens[i] = (JSON.parse(text) as { token: string }).token;
  });
  return tokens[0]!;
}

/** One request per route before measuring: a wrong status here would make the numbers meaningless. */
async function checkRoutes(url: string, token: string): Promise<void> {
  for (const route of ROUTES) {
    const res = await fetch(url + route.path, { headers: route.auth ? { authorization: `Bearer ${token}` } : {} });
    const body = (await res.json()) as unknown;
    if (res.status !== 200) throw new Error(`GET ${route.path} -> ${res.status} ${JSON.stringify(body)}`);
    // The log is per workspace: its registration plus its share of the keys.
    const expected = Math.min(20, KEYS / WORKSPACES + 1);
    if (route.name === 'audit-logs' && (!Array.isArray(body) || body.length !== expected)) {
      throw new Error(
        `GET ${route.path} returned ${Array.isArray(body) ? body.length : 'no'} entries, expected ${expected}`,
      );
    }
  }
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
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0 || result['2xx'] === 0) {
    throw new Error(
      `GET ${path}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts of ${result.requests.total} requests`,
    );
  }
  return result;
}

async function benchStore(store: Row['store'], env: Record<string, string>): Promise<Row[]> {
  log(`[${store}] starting slipway`);
  const slipway = await startSlipway(env);
  try {
    log(`[${store}] seeding ${WORKSPACES} workspaces and ${KEYS} API keys`);
    const token = await seed(slipway.url);
    await checkRoutes(slipway.url, token);
    // A short warm-up so the first measured route does not pay for JIT and connection pools.
    if (!SMOKE) for (const route of ROUTES) await measure(slipway.url, route.path, route.auth ? token : undefined, 1);
    const rows: Row[] = [];
    for (const route of ROUTES) {
      log(`[${store}] GET ${route.path}: ${CONNECTIONS} connections for ${DURATION_S} s`);
      const r = await measure(slipway.url, route.path, route.auth ? token : undefined, DURATION_S);
      rows.push({
        store,
        route: `GET ${route.path}`,
        reqPerSec: Math.round(r.requests.average),
        p99Ms: r.latency.p99,
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

/** A throwaway database on the local Postgres; undefined when none answers. */
async function createDatabase(): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (err) {
    log(`postgres at ${POSTGRES_ADMIN_URL} unreachable: ${(err as Error).message}`);
    return undefined;
  }
  const name = `slipway_bench_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      // FORCE: a pool the child left open must not keep the database alive.
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => admin.end());
    },
  };
}

async function main() {
  const rows: Row[] = [];
  const skipped: string[] = [];
  rows.push(...(await benchStore('pglite', {})));
  const db = await createDatabase();
  if (!db) skipped.push('postgres');
  else {
    try {
      rows.push(...(await benchStore('postgres', { DATABASE_URL: db.url })));
    } finally {
      await db.drop();
    }
  }

  console.log(
    `\napi: ${CONNECTIONS} connections, ${DURATION_S} s per route, ${KEYS} API keys in ${WORKSPACES} workspaces${SMOKE ? ' (smoke)' : ''}`,
  );
  console.log(
    table(
      ['store', 'route', 'req/s', 'p99 ms', 'ratio'],
      rows.map((r) => [r.store, r.route, r.reqPerSec, r.p99Ms, r.ratio]),
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
      results: rows,
      skipped,
    }),
  );
}

main().catch((err: Error) => {
  console.error(`bench api failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
