/**
 * bench/cost.ts: GET /v1/workspaces/:id/cost-estimate for a workspace with 100 services and 10 datastores metered every
 * 60 s (the default interval) for 30 days, against GET /v1/usage for the same period in the same run (the estimate is
 * the usage report priced, and projected from the 100 services, created through the API and running as configured: the
 * ratio is what pricing and the projection add). Target: estimate p99 <= 100 ms on Postgres.
 * BENCH_SMOKE=1: 1 day. BENCH_STORES=postgres measures one store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/app/config.js';
import { openStore } from '../src/store/db.js';
import { rollUpUsage } from '../src/store/repos/usage-rollups.js';
import { createDatabase, log, percentile, signUp, startSlipway, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const DAYS = Number(process.env.BENCH_COST_DAYS ?? (SMOKE ? 1 : 30));
const SERVICES = 100;
const DATASTORES = 10;
const REQUESTS = Number(process.env.BENCH_COST_REQUESTS ?? (SMOKE ? 30 : 100));

/** One ledger entry a minute for every resource, ending now, written straight into the stopped Slipway's store. */
async function seedLedger(env: Record<string, string>, workspaceId: string, serviceIds: string[]): Promise<number> {
  const store = await openStore(loadConfig({ ...process.env, ...env }));
  try {
    // As the meter writes them: every resource's minute, one minute after another (ids follow time). The datastores
    // stand for deleted ones (real ones would start 10 servers).
    const resources = [
      ...serviceIds.map((id) => `('${id}', 'instance_seconds', 'starter')`),
      ...Array.from({ length: DATASTORES / 2 }, (_, i) => `('dpg-bench-${i}', 'datastore_seconds', 'basic_1gb')`),
      ...Array.from({ length: DATASTORES / 2 }, (_, i) => `('red-bench-${i}', 'datastore_seconds', 'starter')`),
    ];
    await store.executeSql(
      `insert into usage_entries
         (workspace_id, resource_id, source_id, kind, plan, quantity, started_at, ended_at, created_at)
       select $1, r.id, r.id || '-src', r.kind, r.plan, 60, t, t + interval '60 seconds', t + interval '60 seconds'
       from generate_series(now() - interval '${DAYS} days', now() - interval '60 seconds', interval '60 seconds') t,
            (values ${resources.join(', ')}) as r(id, kind, plan)
       order by t, r.id`,
      [workspaceId],
    );
    // What the meter would have rolled up into hours as it went (BENCH_COST_ROLLUP=0: the raw ledger only).
    if (process.env.BENCH_COST_ROLLUP !== '0')
      while ((await rollUpUsage(store.db, { maxRows: 500_000, lagSeconds: 60 })) > 0);
    if (store.kind === 'postgres') await store.executeSql('analyze');
    const rows = (await store.executeSql('select count(*)::int as n from usage_entries', [])) as unknown as {
      rows: Array<{ n: number }>;
    };
    return rows.rows[0]!.n;
  } finally {
    await store.close();
  }
}

async function timed(url: string, headers: Record<string, string>) {
  const started = performance.now();
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  return performance.now() - started;
}

async function benchStore(store: string, env: Record<string, string>) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-cost-'));
  try {
    const first = await startSlipway(env, { dataDir });
    const { user, serviceIds } = await (async () => {
      const user = await signUp(first.url);
      const serviceIds: string[] = [];
      for (let i = 0; i < SERVICES; i++) {
        const body = { type: 'web_service', name: `bench-${i}`, serviceDetails: { runtime: 'node', plan: 'starter' } };
        serviceIds.push((await user.call('POST', '/v1/services', body)).service.id as string);
      }
      return { user, serviceIds };
    })().finally(() => first.stop());
    log(`[${store}] writing ${DAYS} days of usage for ${SERVICES + DATASTORES} resources`);
    const started = Date.now();
    const rows = await seedLedger({ ...env, SLIPWAY_DATA_DIR: dataDir }, user.workspaceId, serviceIds);
    log(`[${store}] ${rows} ledger entries in ${((Date.now() - started) / 1000).toFixed(1)} s; restarting slipway`);
    const slipway = await startSlipway(env, { dataDir });
    try {
      const estimateUrl = `${slipway.url}/v1/workspaces/${user.workspaceId}/cost-estimate`;
      const first = (await (await fetch(estimateUrl, { headers: user.headers })).json()) as {
        startTime: string;
        endTime: string;
        projection: unknown[];
      };
      if (first.projection?.length !== SERVICES)
        throw new Error(`the estimate projects ${first.projection?.length} services, not ${SERVICES}`);
      const usageUrl = `${slipway.url}/v1/usage?ownerId=${user.workspaceId}&startTime=${first.startTime}&endTime=${first.endTime}`;
      const usage: number[] = [];
      const estimate: number[] = [];
      for (let i = 0; i < 5; i++) await Promise.all([timed(usageUrl, user.headers), timed(estimateUrl, user.headers)]);
      // Interleaved, one at a time: each pays for the same cache and the same machine.
      for (let i = 0; i < REQUESTS; i++) {
        usage.push(await timed(usageUrl, user.headers));
        estimate.push(await timed(estimateUrl, user.headers));
      }
      const p = (v: number[], q: number) => Math.round(percentile(v, q) * 10) / 10;
      return {
        store,
        rows,
        usage: { p50: p(usage, 50), p99: p(usage, 99) },
        estimate: { p50: p(estimate, 50), p99: p(estimate, 99) },
      };
    } finally {
      await slipway.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const stores = process.env.BENCH_STORES?.split(',') ?? ['postgres', 'pglite'];
  const results = [];
  const skipped: string[] = [];
  if (stores.includes('postgres')) {
    const db = await createDatabase();
    if (!db) skipped.push('postgres');
    else results.push(await benchStore('postgres', { DATABASE_URL: db.url }).finally(() => db.drop()));
  }
  if (stores.includes('pglite')) results.push(await benchStore('pglite', {}));
  console.log(
    `\ncost: ${SERVICES} services, ${DATASTORES} datastores, ${DAYS} days metered every 60 s${SMOKE ? ' (smoke)' : ''}`,
  );
  console.log(
    table(
      ['store', 'ledger rows', 'usage p50 / p99 ms', 'estimate p50 / p99 ms', 'estimate / usage (p50)', 'target'],
      results.map((r) => [
        r.store,
        r.rows,
        `${r.usage.p50} / ${r.usage.p99}`,
        `${r.estimate.p50} / ${r.estimate.p99}`,
        Math.round((r.estimate.p50 / r.usage.p50) * 100) / 100,
        r.store === 'postgres' ? `p99 <= 100: ${r.estimate.p99 <= 100 ? 'met' : 'missed'}` : '',
      ]),
    ),
  );
  console.log(
    JSON.stringify({
      bench: 'cost',
      smoke: SMOKE,
      days: DAYS,
      services: SERVICES,
      datastores: DATASTORES,
      results,
      skipped,
    }),
  );
}

await main();
