/**
 * Metrics sampler overhead and history query time. 50 idle process trees stand in for 50
 * instances; the real sampler (one /proc scan per tick, one batched insert into PGlite) runs
 * on them, and its CPU time per tick is compared with a tick that has no instances (the
 * baseline: the scan and an empty write) in the same run. Then `history` queries over stored
 * samples of 50 instances, against a trivial query on the same store.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/app/config.js';
import { createMetricsSampler, createTrafficCounter } from '../src/observability/metrics/sampler.js';
import { rollUpMetrics } from '../src/observability/metrics/rollup.js';
import { createMetricQueries } from '../src/observability/metrics/series.js';
import { readStat } from '../src/runtime/local/proc.js';
import { openStore } from '../src/store/db.js';
import { createMetricRepo, type MetricSampleInsert } from '../src/store/repos/metrics.js';
import { log, percentile, sleep, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const INSTANCES = 50;
const TICKS = SMOKE ? 10 : 50;
const HISTORY_HOURS = SMOKE ? 1 : 24;
const QUERIES = SMOKE ? 20 : 100;
const DEFAULT_INTERVAL_S = 10;

const cpuMs = (since: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
};

async function main() {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-metrics-'));
  const children: ChildProcess[] = [];
  const store = await openStore(loadConfig({ SLIPWAY_DATA_DIR: dataDir }));
  try {
    // 50 instances: a shell with a child each, so the sampler walks real trees.
    for (let i = 0; i < INSTANCES; i++)
      children.push(spawn('/bin/sh', ['-c', 'sleep 600 & wait'], { stdio: 'ignore', detached: true }));
    await sleep(300);
    const instances = children.map((c, i) => ({
      id: `ins-${i}`,
      serviceId: 'srv-bench',
      status: 'running' as const,
      pid: c.pid!,
      startTime: readStat(c.pid!)!.startTime,
    }));
    const repo = createMetricRepo(store.db);
    const samplerWith = (list: typeof instances) =>
      createMetricsSampler({
        activeInstances: async () => list,
        insert: (rows) => repo.insert(rows),
        intervalMs: 1000,
        log: console,
        traffic: createTrafficCounter(),
      });

    const measure = async (list: typeof instances) => {
      const sampler = samplerWith(list);
      await sampler.tick(); // warm-up (first sight of each process)
      const perTick: number[] = [];
      for (let i = 0; i < TICKS; i++) {
        const start = process.cpuUsage();
        await sampler.tick();
        perTick.push(cpuMs(start));
      }
      return { p50: percentile(perTick, 50), mean: perTick.reduce((a, b) => a + b, 0) / perTick.length };
    };
    log(`sampling ${INSTANCES} instances, ${TICKS} ticks each way…`);
    const baseline = await measure([]);
    const loaded = await measure(instances);

    // History: HISTORY_HOURS of 10 s samples for the 50 instances, queried as the dashboard would.
    log(`storing ${HISTORY_HOURS} h of samples for ${INSTANCES} instances…`);
    const end = Date.now();
    const start = end - HISTORY_HOURS * 3_600_000;
    for (let t = start; t < end; t += 100 * 10_000) {
      const rows: MetricSampleInsert[] = [];
      for (let k = 0; k < 100 && t + k * 10_000 < end; k++) {
        for (const inst of instances)
          rows.push({
            serviceId: 'srv-bench',
            instanceId: inst.id,
            resolution: 0,
            timestamp: new Date(t + k * 10_000),
            cpuPercent: Math.random() * 100,
            memoryBytes: 50_000_000,
          });
      }
      await repo.insert(rows);
    }
    // What the metrics-rollup job (every 10 minutes) leaves: raw samples for the last hour, 60 s roll-ups before.
    const rollStart = performance.now();
    await rollUpMetrics(repo);
    const rollupMs = performance.now() - rollStart;
    const queries = createMetricQueries({ repo, intervalMs: 10_000 });
    const timed = async (run: () => Promise<unknown>) => {
      const ms: number[] = [];
      for (let i = 0; i < QUERIES; i++) {
        const t0 = performance.now();
        await run();
        ms.push(performance.now() - t0);
      }
      return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
    };
    const resolution = HISTORY_HOURS >= 24 ? 600 : 60;
    const history = await timed(() =>
      queries.history({ id: 'srv-bench', plan: 'starter' }, 'cpu', {
        startTime: new Date(start).toISOString(),
        endTime: new Date(end).toISOString(),
        resolutionSeconds: resolution,
      }),
    );
    const trivial = await timed(() => store.executeSql('select count(*) from instances', []));

    const overheadPercent = (loaded.mean / (DEFAULT_INTERVAL_S * 1000)) * 100;
    const result = {
      bench: 'metrics',
      smoke: SMOKE,
      store: store.kind,
      instances: INSTANCES,
      tickCpuMs: Number(loaded.mean.toFixed(2)),
      emptyTickCpuMs: Number(baseline.mean.toFixed(2)),
      tickVsEmpty: Number((loaded.mean / baseline.mean).toFixed(2)),
      samplerCorePercentAt10s: Number(overheadPercent.toFixed(3)),
      historyRows: Math.round((HISTORY_HOURS * 3600 * INSTANCES) / 10),
      historyResolutionSeconds: resolution,
      rollupMs: Math.round(rollupMs),
      historyP50Ms: Number(history.p50.toFixed(1)),
      historyP99Ms: Number(history.p99.toFixed(1)),
      trivialQueryP50Ms: Number(trivial.p50.toFixed(2)),
      historyVsTrivial: Number((history.p50 / trivial.p50).toFixed(1)),
    };
    process.stderr.write(
      `${table(
        ['measure', 'value'],
        [
          [`sampler CPU per tick, ${INSTANCES} instances (ms)`, result.tickCpuMs],
          ['sampler CPU per tick, no instances (ms, baseline)', result.emptyTickCpuMs],
          ['ratio', result.tickVsEmpty],
          [`share of one core at the default ${DEFAULT_INTERVAL_S} s interval (%)`, result.samplerCorePercentAt10s],
          [`rolling up ${result.historyRows} raw samples (ms, once)`, result.rollupMs],
          [
            `history p50 / p99 (ms), ${HISTORY_HOURS} h of samples, ${resolution} s buckets`,
            `${result.historyP50Ms} / ${result.historyP99Ms}`,
          ],
          ['trivial query p50 (ms, baseline)', result.trivialQueryP50Ms],
        ],
      )}\n`,
    );
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    for (const c of children) {
      try {
        process.kill(-c.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
