/**
 * The log pipeline: a fixture app prints RATE lines/s for SECONDS with SUBSCRIBERS WebSocket
 * subscribers: lines lost, print→receipt latency, Slipway CPU per 1,000 lines/s (against the
 * same process idle, measured in the same run). Then GET /v1/logs?limit=100 p99 with ROWS
 * stored lines (bulk-inserted), unfiltered, with resource and level filters and with a /regex/
 * on the text, against GET /api/health on the same server (the ratio). Then GET /api/health
 * p99 while an app floods its log at FLOOD_RATE lines/s (far over the per-service limit),
 * against the same server before the flood (the ratio).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { startSlipway as startInProcess } from '../src/app/start.js';
import { killProcessesUnder } from '../test/helpers/kill-under.js';
import { fixtureArchive, inProcessConfig, log, percentile, signUp, sleep, startSlipway, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const RATE = SMOKE ? 2000 : 5000;
const SECONDS = SMOKE ? 5 : 20;
const SUBSCRIBERS = Number(process.env.BENCH_LOG_SUBSCRIBERS || (SMOKE ? 3 : 10));
const ROWS = Number(process.env.BENCH_LOG_ROWS || (SMOKE ? 200_000 : 5_000_000));
const QUERIES = SMOKE ? 100 : 300;
const TICK_MS = 10;
const FLOOD_RATE = 20_000;
const FLOOD_SECONDS = SMOKE ? 3 : 10;

/** CPU seconds (user + system) the process has used so far. */
const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

async function streaming() {
  // The per-service log limit is raised: this measures the pipeline, not the limit.
  const slipway = await startSlipway({
    SLIPWAY_ROUTER_PORT: '0',
    SLIPWAY_LOG_RATE_LINES: String(RATE * 2),
    SLIPWAY_LOG_BURST_LINES: String(RATE * 10),
    ...(process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : {}),
  });
  try {
    const { headers, call } = await signUp(slipway.url);
    const total = RATE * SECONDS;
    const created = await call('POST', '/v1/services', {
      type: 'web_service',
      name: 'log-bench',
      serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
      envVars: [
        { key: 'LINE_MS', value: String(TICK_MS) },
        { key: 'BURST', value: String((RATE * TICK_MS) / 1000) },
        { key: 'STOP_AFTER_LINES', value: String(total) },
      ],
    });
    const serviceId = created.service.id;

    // Subscribers first (live tail only), then the app starts printing.
    const subscribers = await Promise.all(
      Array.from({ length: SUBSCRIBERS }, async () => {
        const ws = new WebSocket(
          `${slipway.url.replace('http', 'ws')}/v1/logs/subscribe?resource=${serviceId}&text=out`,
          { headers },
        );
        const seen = new Set<number>();
        const latencies: number[] = [];
        ws.on('message', (data) => {
          // A regex on the raw JSON, not JSON.parse: at 50,000 messages/s the bench's own parsing would be what falls behind.
          const m = /"message":"out (\d+) (\d+)/.exec(String(data));
          if (!m) return;
          seen.add(Number(m[1]));
          latencies.push(Date.now() - Number(m[2]));
        });
        const closes: number[] = [];
        ws.on('close', (code) => closes.push(code));
        await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
        return { ws, seen, latencies, closes };
      }),
    );

    const idleFrom = cpuSeconds(slipway.pid);
    await sleep(2000);
    const idleCpu = (cpuSeconds(slipway.pid) - idleFrom) / 2;

    await call('POST', `/v1/services/${serviceId}/source/upload`, undefined, await fixtureArchive('log-printer'));
    // Printing starts when the instance does; CPU is measured from the first line received to the last.
    while (subscribers[0]!.seen.size === 0) await sleep(5);
    const cpuFrom = cpuSeconds(slipway.pid);
    const started = Date.now();
    const deadline = started + SECONDS * 1000 + 30_000;
    while (Date.now() < deadline && subscribers.some((s) => s.seen.size < total)) await sleep(20);
    const busySeconds = (Date.now() - started) / 1000;
    const loadCpu = (cpuSeconds(slipway.pid) - cpuFrom) / busySeconds;
    for (const s of subscribers) s.ws.close();
    // Apps outlive Slipway by design: this one must not outlive the bench.
    await call('DELETE', `/v1/services/${serviceId}`);

    const lost = Math.max(...subscribers.map((s) => total - s.seen.size));
    if (process.env.BENCH_DEBUG) {
      const s = subscribers[0]!;
      const missing = Array.from({ length: total }, (_, i) => i).filter((i) => !s.seen.has(i));
      log(
        `closes ${JSON.stringify(subscribers.map((x) => x.closes))} missing ${missing.length}: ${missing.slice(0, 20).join(',')} … ${missing.slice(-5).join(',')}`,
      );
    }
    const latencies = subscribers.flatMap((s) => s.latencies);
    return {
      lines: total,
      rate: RATE,
      subscribers: SUBSCRIBERS,
      lost,
      latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
      cpu: {
        idleCores: Number(idleCpu.toFixed(3)),
        loadCores: Number(loadCpu.toFixed(3)),
        perThousandLinesPerSec: Number((((loadCpu - idleCpu) * 1000) / RATE).toFixed(3)),
      },
    };
  } finally {
    await slipway.stop();
  }
}

async function querying() {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-logq-'));
  const slipway = await startInProcess(
    inProcessConfig(dataDir, {
      DATABASE_URL: process.env.BENCH_DATABASE_URL ?? '',
      SLIPWAY_RATE_LIMIT_PER_MINUTE: '100000000',
    }),
    { log: false },
  );
  try {
    const { headers, workspaceId } = await signUp(slipway.url);
    const t0 = Date.now();
    // Ten services' worth of lines in one workspace, each with a unique, increasing timestamp.
    for (let done = 0; done < ROWS; done += 100_000) {
      await slipway.store.executeSql(
        `insert into logs (workspace_id, resource_id, instance_id, type, level, message, timestamp)
        select $1, 'srv-bench' || (n % 10), 'srv-bench-i', 'app', case when n % 7 = 0 then 'error' else 'info' end, 'line ' || n || ' of the benchmark',
          now() - interval '50 minutes' + n * interval '1 microsecond' * 500
        from generate_series($2::bigint, $3::bigint) n`,
        [workspaceId, done, Math.min(ROWS, done + 100_000) - 1],
      );
    }
    // PGlite has no autovacuum: without fresh statistics the planner does not know the table is big.
    await slipway.store.executeSql('analyze logs');
    log(`inserted ${ROWS} lines in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const time = async (url: string) => {
      const samples: number[] = [];
      for (let i = 0; i < QUERIES; i++) {
        const start = performance.now();
        const res = await fetch(`${slipway.url}${url}`, { headers });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
        samples.push(performance.now() - start);
      }
      return { p50: Number(percentile(samples, 50).toFixed(2)), p99: Number(percentile(samples, 99).toFixed(2)) };
    };
    const baseline = await time('/api/health');
    const latest = await time('/v1/logs?limit=100');
    const filtered = await time('/v1/logs?limit=100&instance=srv-bench-i&level=error');
    // A /regex/ text filter: matched in memory (lib/linear-regex.ts), about 1 line in 10.
    const regex = await time(`/v1/logs?limit=100&text=${encodeURIComponent('/^line \\d+7 of the/')}`);
    return {
      rows: ROWS,
      baselineMs: baseline,
      latestMs: latest,
      filteredMs: filtered,
      regexMs: regex,
      ratioP99: Number((latest.p99 / baseline.p99).toFixed(2)),
    };
  } finally {
    await slipway.close();
    killProcessesUnder(dataDir); // the router process outlives Slipway by design, not the bench
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Sequential GET /api/health for `seconds`: p50 and p99 (ms), and how many were not 200 (the store's ping timed out). */
async function healthLatency(url: string, seconds: number) {
  const samples: number[] = [];
  let failed = 0;
  for (const until = Date.now() + seconds * 1000; Date.now() < until;) {
    const start = performance.now();
    const res = await fetch(`${url}/api/health`);
    await res.arrayBuffer();
    if (res.status !== 200) failed++;
    samples.push(performance.now() - start);
    await sleep(2);
  }
  return {
    requests: samples.length,
    failed,
    p50: Number(percentile(samples, 50).toFixed(2)),
    p99: Number(percentile(samples, 99).toFixed(2)),
  };
}

/** API latency while one app prints FLOOD_RATE lines/s (default limits), against the same server before. */
async function flooding() {
  const slipway = await startSlipway({
    SLIPWAY_ROUTER_PORT: '0',
    ...(process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : {}),
  });
  try {
    const { call } = await signUp(slipway.url);
    const created = await call('POST', '/v1/services', {
      type: 'web_service',
      name: 'log-flood-bench',
      serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
      envVars: [
        { key: 'LINE_MS', value: String(TICK_MS) },
        { key: 'BURST', value: String((FLOOD_RATE * TICK_MS) / 1000) },
      ],
    });
    const serviceId = created.service.id;
    const quiet = await healthLatency(slipway.url, FLOOD_SECONDS);
    await call('POST', `/v1/services/${serviceId}/source/upload`, undefined, await fixtureArchive('log-printer'));
    const since = new Date(Date.now() - 60_000).toISOString();
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(100)) {
      const page = await call('GET', `/v1/logs?resource=${serviceId}&text=out&limit=1&startTime=${since}`);
      if (page.logs.length) break;
    }
    const flood = await healthLatency(slipway.url, FLOOD_SECONDS);
    // Drops are reported every 5 s: wait for the first report (there is none without a limit).
    let events: Array<{ event: { details: { droppedLines: number } } }> = [];
    for (const deadline = Date.now() + 8000; !events.length && Date.now() < deadline; await sleep(200)) {
      events = await call('GET', `/v1/services/${serviceId}/events?type=log_lines_dropped&limit=100`);
    }
    await call('DELETE', `/v1/services/${serviceId}`);
    return {
      rate: FLOOD_RATE,
      seconds: FLOOD_SECONDS,
      quietMs: quiet,
      floodMs: flood,
      droppedLines: events.reduce((n, e) => n + e.event.details.droppedLines, 0),
      ratioP99: Number((flood.p99 / quiet.p99).toFixed(2)),
    };
  } finally {
    await slipway.stop();
  }
}

async function main() {
  // BENCH_LOGS_PARTS=flood (say) runs only some parts.
  const parts = new Set((process.env.BENCH_LOGS_PARTS || 'stream,query,flood').split(','));
  const stream = parts.has('stream') ? await streaming() : undefined;
  const query = parts.has('query') ? await querying() : undefined;
  const flood = parts.has('flood') ? await flooding() : undefined;
  log(
    table(
      ['measure', 'value', 'target'],
      [
        ...(stream
          ? [
              [
                `lines lost (${stream.lines} lines at ${stream.rate}/s, ${stream.subscribers} subscribers)`,
                stream.lost,
                '0',
              ],
              ['print->receipt p50 (ms)', stream.latencyMs.p50, ''],
              ['print->receipt p99 (ms)', stream.latencyMs.p99, '<= 50 at 5k lines/s (before: 252)'],
              ['Slipway CPU idle / under load (cores)', `${stream.cpu.idleCores} / ${stream.cpu.loadCores}`, ''],
              ['Slipway CPU per 1,000 lines/s (cores)', stream.cpu.perThousandLinesPerSec, ''],
            ]
          : []),
        ...(query
          ? [
              [
                `GET /v1/logs?limit=100 p50 / p99 (ms), ${query.rows} lines`,
                `${query.latestMs.p50} / ${query.latestMs.p99}`,
                'p99 <= 50',
              ],
              [
                '  with resource + level filters p50 / p99 (ms)',
                `${query.filteredMs.p50} / ${query.filteredMs.p99}`,
                '',
              ],
              [
                '  with a /regex/ text filter (1 line in 10) p50 / p99 (ms)',
                `${query.regexMs.p50} / ${query.regexMs.p99}`,
                '',
              ],
              ['  baseline GET /api/health p50 / p99 (ms)', `${query.baselineMs.p50} / ${query.baselineMs.p99}`, ''],
              ['  logs p99 / baseline p99', query.ratioP99, ''],
            ]
          : []),
        ...(flood
          ? [
              [`GET /api/health p50 / p99 (ms), no flood`, `${flood.quietMs.p50} / ${flood.quietMs.p99}`, ''],
              [
                `  while an app prints ${flood.rate} lines/s`,
                `${flood.floodMs.p50} / ${flood.floodMs.p99}`,
                'p99 < 100',
              ],
              ['  requests / not 200 during the flood', `${flood.floodMs.requests} / ${flood.floodMs.failed}`, ''],
              ['  flood p99 / no-flood p99', flood.ratioP99, ''],
              ['  lines dropped over the limit (reported)', flood.droppedLines, ''],
            ]
          : []),
      ],
    ),
  );
  console.log(JSON.stringify({ bench: 'logs', smoke: SMOKE, stream, query, flood }));
  if (stream && stream.lost > 0) process.exitCode = 1;
}

await main();
