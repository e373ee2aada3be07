/**
 * Webhook delivery: 100 webhooks (one per workspace, each with a service), 1,000 events at 100 events/s (service
 * renames, so each event's payload names it), against one local receiver. Reports event → receipt latency (the
 * payload's timestamp to arrival), deliveries/s, Slipway's CPU, and lost deliveries; then the same with a kill -9 of
 * Slipway half-way and a restart on the same data dir. The baseline is the same receiver's latency for a direct
 * POST from this process, so the ratio is Slipway's overhead.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { log, percentile, pool, signUp, sleep, startSlipway, table, type BenchCaller } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const WEBHOOKS = SMOKE ? 10 : 100;
const EVENTS = SMOKE ? 100 : 1000;
const RATE = 100; // events per second
// BENCH_DATABASE_URL: run on that (empty) Postgres database instead of PGlite.
const ENV = {
  SLIPWAY_WEBHOOK_ALLOW_PRIVATE: '1',
  SLIPWAY_WEBHOOK_RETRY_BASE_MS: '500',
  ...(process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : {}),
};

/** The receiver: arrival time per (webhook, serviceName), each event's name being unique. */
async function startReceiver() {
  const arrivals = new Map<string, number>();
  const latencies: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const now = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const key = `${req.url}|${body.data?.serviceName}`;
      if (!arrivals.has(key) && body.type === 'service_updated') {
        arrivals.set(key, now);
        latencies.push(now - Date.parse(body.timestamp));
      }
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { port, arrivals, latencies, close: () => new Promise((r) => server.close(r)) };
}

const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks of 1/100 s
};

interface Tenant {
  call: BenchCaller;
  serviceId: string;
  hookPath: string;
}

/** Renames at RATE/s round robin over the tenants; answers the names Slipway accepted (each one event). */
async function fire(tenants: Tenant[], count: number, tag: string, onHalf?: () => void): Promise<string[]> {
  const accepted: string[] = [];
  const start = Date.now();
  const sends: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const wait = start + (i * 1000) / RATE - Date.now();
    if (wait > 0) await sleep(wait);
    if (i === Math.floor(count / 2)) onHalf?.();
    const t = tenants[i % tenants.length]!;
    const name = `${tag}-${i}`;
    sends.push(
      t.call('PATCH', `/v1/services/${t.serviceId}`, { name }).then(
        () => void accepted.push(`${t.hookPath}|${name}`),
        () => undefined, // refused by a killed Slipway: no event
      ),
    );
  }
  await Promise.all(sends);
  return accepted;
}

async function waitForAll(arrivals: Map<string, number>, expected: string[], timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && expected.some((k) => !arrivals.has(k))) await sleep(100);
  return expected.filter((k) => !arrivals.has(k)).length;
}

async function main() {
  const receiver = await startReceiver();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-hooks-'));
  let slipway = await startSlipway(ENV, { dataDir });
  try {
    // Baseline: the receiver's latency for a direct POST.
    const direct: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await fetch(`http://127.0.0.1:${receiver.port}/baseline`, { method: 'POST', body: '{}' });
      direct.push(performance.now() - t0);
    }
    log(`setting up ${WEBHOOKS} workspaces with a webhook and a service each`);
    const tenants: Tenant[] = [];
    await pool(
      Array.from({ length: WEBHOOKS }, (_, i) => i),
      8,
      async (i) => {
        const { call } = await signUp(slipway.url);
        const hookPath = `/hook/${i}`;
        await call('POST', '/v1/webhooks', { name: `bench-${i}`, url: `http://127.0.0.1:${receiver.port}${hookPath}` });
        const { service } = await call('POST', '/v1/services', {
          type: 'web_service',
          name: `svc-${i}`,
          serviceDetails: { runtime: 'node' },
        });
        tenants.push({ call, serviceId: service.id, hookPath });
      },
    );
    // Callers are bound to the first process's URL: rebind on restart.
    const rows: Array<Array<string | number>> = [];
    const result: Record<string, unknown> = {
      store: process.env.BENCH_DATABASE_URL ? 'postgres' : 'pglite',
      webhooks: WEBHOOKS,
      events: EVENTS,
      ratePerSec: RATE,
    };

    // A cold start (lazy route schemas, JIT, the store's caches) is measured apart from the steady state.
    const WARMUP = Math.round(EVENTS / 5);
    log(`warm-up: ${WARMUP} events at ${RATE}/s`);
    const acceptedWarm = await fire(tenants, WARMUP, 'warm');
    const lostWarm = await waitForAll(receiver.arrivals, acceptedWarm, 60_000);
    const latWarm = receiver.latencies.splice(0);
    rows.push(['cold', acceptedWarm.length, percentile(latWarm, 50), percentile(latWarm, 99), '', '', lostWarm]);
    Object.assign(result, {
      coldP50Ms: percentile(latWarm, 50),
      coldP99Ms: percentile(latWarm, 99),
      coldLost: lostWarm,
    });

    log(`phase 1: ${EVENTS} events at ${RATE}/s`);
    const cpu0 = cpuSeconds(slipway.pid);
    const t0 = Date.now();
    const accepted = await fire(tenants, EVENTS, 'steady');
    const lost = await waitForAll(receiver.arrivals, accepted, 60_000);
    const elapsed = (Date.now() - t0) / 1000;
    const cpu = (cpuSeconds(slipway.pid) - cpu0) / elapsed;
    const lat = receiver.latencies.splice(0);
    const p50 = percentile(lat, 50);
    const p99 = percentile(lat, 99);
    const perSec = Math.round(accepted.length / elapsed);
    rows.push(['steady', accepted.length, p50, p99, perSec, `${Math.round(cpu * 100)}%`, lost]);
    Object.assign(result, { p50Ms: p50, p99Ms: p99, deliveriesPerSec: perSec, cpu, lost });

    log(`phase 2: ${EVENTS} events at ${RATE}/s, kill -9 half-way, restart on the same data dir`);
    const before = slipway;
    let killedAt = 0;
    const acceptedKill = await fire(tenants, EVENTS, 'killed', () => {
      killedAt = Date.now();
      process.kill(before.pid, 'SIGKILL');
    });
    await before.stop();
    slipway = await startSlipway(ENV, { dataDir });
    log(`restarted ${Date.now() - killedAt} ms after the kill`);
    const lostKill = await waitForAll(receiver.arrivals, acceptedKill, 120_000);
    const latKill = receiver.latencies.splice(0);
    rows.push(['kill -9', acceptedKill.length, percentile(latKill, 50), percentile(latKill, 99), '', '', lostKill]);
    Object.assign(result, { killAccepted: acceptedKill.length, killLost: lostKill });

    console.log(table(['phase', 'events', 'p50 ms', 'p99 ms', 'deliveries/s', 'slipway cpu', 'lost'], rows));
    const base = percentile(direct, 50);
    console.log(`baseline (direct POST to the receiver) p50 ${base.toFixed(2)} ms; targets: p99 <= 1000 ms, 0 lost`);
    console.log(JSON.stringify({ bench: 'webhooks', ...result, baselineP50Ms: base, p99Met: p99 <= 1000 }));
  } finally {
    await slipway.stop();
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
