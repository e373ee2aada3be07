/**
 * Issue 29 §2, "no request holds the event loop": what one tenant's worst inputs (bench/abuse-cases.ts) do to everyone
 * else. For each case, on one Slipway (PGlite, its own process) and against a quiet phase of the same run: /api/health
 * p50/p99, then another workspace's deploy (trigger -> live, the fixture app, no build), git deploy (a new commit ->
 * live, through autoDeploy's polls) and webhook delivery (test ping -> receipt) latency, while the abuse goes on. Targets: health p99 <= 100 ms; each median within 2x of quiet.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startSlipway as startInProcess } from '../src/app/start.js';
import { sweepBuildDisks } from '../src/runtime/local/build-disks.js';
import { killProcessesUnder } from '../test/helpers/kill-under.js';
import { CASES, type AbuseCase } from './abuse-cases.js';
import {
  inProcessConfig,
  liveFixtureService,
  log,
  percentile,
  signUp,
  sleep,
  startSlipway,
  table,
  waitLive,
} from './lib.js';
import { webhookVictim } from './webhook-backlog.js';
import { gitEnv, gitVictim, hostAddress } from './abuse-git.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
/** How long each phase measures health, then the victim's latencies. */
const SECONDS = Number(process.env.BENCH_ABUSE_SECONDS || (SMOKE ? 4 : 20));
/** BENCH_ABUSE_CASES=builds,git: only the cases whose names contain one of these words (the quiet phase always runs). */
const PICKED = process.env.BENCH_ABUSE_CASES?.split(',').filter(Boolean);
const cases = PICKED ? CASES.filter((c) => PICKED.some((word) => c.name.includes(word))) : CASES;
/** The abuse runs this long before its phase is measured. */
const WARM_UP_MS = 1000;
const round = (n: number) => Number(n.toFixed(1));

/** The store gets what the cases prepare (in process, before the measured Slipway starts on the same data dir). */
async function prepare(dataDir: string, cases: AbuseCase[]) {
  const slipway = await startInProcess(inProcessConfig(dataDir), { log: false });
  try {
    for (const c of cases)
      await c.prepare?.({ url: slipway.url, executeSql: (t, v) => slipway.store.executeSql(t, v) });
  } finally {
    await slipway.close();
    killProcessesUnder(dataDir); // its router process: the measured Slipway starts its own
  }
}

/** Another workspace: a live web service to redeploy, and a webhook to a receiver that answers. */
async function startVictim(url: string, host: string) {
  const { call } = await signUp(url);
  const { service } = await liveFixtureService(call, 'victim');
  const webhook = await webhookVictim(url);
  const git = await gitVictim(url, host);
  return {
    git,
    async deploy(): Promise<number> {
      const started = performance.now();
      await waitLive(call, service.id, (await call('POST', `/v1/services/${service.id}/deploys`, {})).id);
      return performance.now() - started;
    },
    webhook,
  };
}
type Victim = Awaited<ReturnType<typeof startVictim>>;

/** How long one measured request may take before it counts as failed (the abuse may hold the server that long). */
const REQUEST_TIMEOUT_MS = 60_000;

/** Repeats `work` (then a pause) for `seconds`: the times it took, and how many times it failed. */
async function during(seconds: number, work: () => Promise<number>, pauseMs: number) {
  const samples: number[] = [];
  let failed = 0;
  for (const until = Date.now() + seconds * 1000; Date.now() < until;) {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), REQUEST_TIMEOUT_MS);
    });
    await Promise.race([work(), timedOut]).then(
      (ms) => samples.push(ms),
      () => failed++,
    );
    clearTimeout(timer);
    await sleep(pauseMs);
  }
  return { samples, failed };
}

/**
 * /api/health alone for SECONDS (the victim's deploys load the machine too: measured apart, health would be theirs as
 * much as the abuse's), then the victim's deploys and webhook deliveries side by side for SECONDS.
 */
async function measure(url: string, victim: Victim) {
  const health = await during(
    SECONDS,
    async () => {
      const started = performance.now();
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`health: ${res.status}`);
      return performance.now() - started;
    },
    20,
  );
  const [deploys, webhooks, gits] = await Promise.all([
    during(SECONDS, () => victim.deploy(), 200),
    during(SECONDS, () => victim.webhook.measure(), 200),
    during(SECONDS, () => victim.git.measure(), 200),
  ]);
  const stats = (values: number[]) =>
    values.length ? { p50: round(percentile(values, 50)), p99: round(percentile(values, 99)) } : { p50: NaN, p99: NaN };
  return {
    health: { n: health.samples.length, ...stats(health.samples) },
    deployMs: { n: deploys.samples.length, median: stats(deploys.samples).p50 },
    webhookMs: { n: webhooks.samples.length, median: stats(webhooks.samples).p50, p99: stats(webhooks.samples).p99 },
    gitMs: { n: gits.samples.length, median: stats(gits.samples).p50 },
    failed: { health: health.failed, deploys: deploys.failed, webhooks: webhooks.failed, git: gits.failed },
  };
}
type Phase = Awaited<ReturnType<typeof measure>>;

const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-abuse-'));
const results: Array<{ name: string; phase: Phase; statuses?: Record<string, number> }> = [];
try {
  await prepare(dataDir, cases);
  // The git servers (the victim's and the dead ones) listen on one of the host's addresses, which builds may reach.
  const host = hostAddress();
  const slipway = await startSlipway(
    { SLIPWAY_ROUTER_PORT: '0', SLIPWAY_WEBHOOK_ALLOW_PRIVATE: '1', ...gitEnv(host) },
    { dataDir },
  );
  try {
    const victim = await startVictim(slipway.url, host);
    log(`quiet: ${SECONDS} s`);
    results.push({ name: 'quiet', phase: await measure(slipway.url, victim) });
    for (const c of cases) {
      log(`${c.name}: ${SECONDS} s`);
      const abuse = await c.start(slipway.url);
      await sleep(WARM_UP_MS);
      const phase = await measure(slipway.url, victim);
      await abuse.stop();
      results.push({ name: c.name, phase, statuses: abuse.statuses() });
    }
    await victim.webhook.stop();
    victim.git.stop();
  } finally {
    await slipway.stop();
  }
} finally {
  await sweepBuildDisks(dataDir); // a deploy's build disk stays mounted when Slipway was killed during it
  rmSync(dataDir, { recursive: true, force: true });
}

const quiet = results[0]!.phase;
const rows = results.map(({ name, phase, statuses }) => {
  const deployRatio = round(phase.deployMs.median / quiet.deployMs.median);
  const webhookRatio = round(phase.webhookMs.median / quiet.webhookMs.median);
  const gitRatio = round(phase.gitMs.median / quiet.gitMs.median);
  const failed = phase.failed.health + phase.failed.deploys + phase.failed.webhooks + phase.failed.git;
  const met = phase.health.p99 <= 100 && deployRatio <= 2 && webhookRatio <= 2 && gitRatio <= 2 && failed === 0;
  return { name, ...phase, deployRatio, webhookRatio, gitRatio, failedCount: failed, met, statuses };
});
console.log(
  table(
    [
      'case',
      'health p50',
      'health p99',
      'deploy median',
      'x quiet',
      'webhook median',
      'x quiet',
      'git median',
      'x quiet',
      'failed',
      'targets met',
    ],
    rows.map((r) => [
      r.name,
      r.health.p50,
      r.health.p99,
      r.deployMs.median,
      r.deployRatio,
      r.webhookMs.median,
      r.webhookRatio,
      r.gitMs.median,
      r.gitRatio,
      r.failedCount,
      r.met ? 'yes' : 'NO',
    ]),
  ),
);
console.log('(ms; targets: health p99 <= 100, deploy, webhook and git medians within 2x of quiet)');
console.log(
  JSON.stringify({ bench: 'abuse', smoke: SMOKE, seconds: SECONDS, cases: rows, met: rows.every((r) => r.met) }),
);
