/**
 * One-off jobs (docs/deploys.md, "One-off jobs"): a job's start → running (POST …/jobs until its status is running)
 * against a deploy's trigger → live of the same service, one of each in turn on one Slipway, so the machine's other
 * load weighs on both alike; the ratio job / deploy is the figure (target ≤ 1). Also a job's start → ended for
 * `true`. BENCH_SMOKE=1: fewer rounds.
 */
import { liveFixtureService, log, median, percentile, signUp, sleep, startSlipway, table, waitLive } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const ROUNDS = SMOKE ? 3 : 15;
const POLL_MS = 10;

type Call = Awaited<ReturnType<typeof signUp>>['call'];

/** Polls a job until `done` says so; returns the ms from `start` and the job. */
async function until(call: Call, url: string, start: number, done: (status: string) => boolean) {
  for (;;) {
    const job = await call('GET', url);
    if (done(job.status)) return { ms: performance.now() - start, job };
    if (['failed', 'canceled'].includes(job.status)) throw new Error(`job ${job.id} ended ${job.status}`);
    await sleep(POLL_MS);
  }
}

async function main() {
  const slipway = await startSlipway();
  try {
    const { call } = await signUp(slipway.url);
    const { service } = await liveFixtureService(call, 'bench-jobs', POLL_MS);
    const jobs = `/v1/services/${service.id}/jobs`;
    const toRunning: number[] = [];
    const toEnded: number[] = [];
    const toLive: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      let start = performance.now();
      const d = await call('POST', `/v1/services/${service.id}/deploys`, {});
      await waitLive(call, service.id, d.id, POLL_MS);
      toLive.push(performance.now() - start);

      // A job that runs a while, so that `running` is seen; the next round waits for its end (3 at once per service).
      start = performance.now();
      const sleeper = await call('POST', jobs, { startCommand: 'sleep 0.5' });
      toRunning.push((await until(call, `${jobs}/${sleeper.id}`, start, (s) => s !== 'pending')).ms);
      await until(call, `${jobs}/${sleeper.id}`, start, (s) => s === 'succeeded');

      start = performance.now();
      const quick = await call('POST', jobs, { startCommand: 'true' });
      toEnded.push((await until(call, `${jobs}/${quick.id}`, start, (s) => s === 'succeeded')).ms);
      log(
        `round ${i + 1}: deploy ${toLive.at(-1)!.toFixed(0)} ms, job running ${toRunning.at(-1)!.toFixed(0)} ms, ` +
          `job ended ${toEnded.at(-1)!.toFixed(0)} ms`,
      );
    }
    const stats = (v: number[]) => ({ median: Math.round(median(v)), p95: Math.round(percentile(v, 95)) });
    const results = {
      jobStartToRunningMs: stats(toRunning),
      jobStartToEndedMs: stats(toEnded),
      deployTriggerToLiveMs: stats(toLive),
      ratio: Number((median(toRunning) / median(toLive)).toFixed(3)),
    };
    log(
      table(
        ['measure', 'median', 'p95', 'target'],
        [
          ['job start -> running (ms)', results.jobStartToRunningMs.median, results.jobStartToRunningMs.p95, ''],
          ['job start -> ended, `true` (ms)', results.jobStartToEndedMs.median, results.jobStartToEndedMs.p95, ''],
          ['deploy trigger -> live (ms)', results.deployTriggerToLiveMs.median, results.deployTriggerToLiveMs.p95, ''],
          ['job running / deploy live (medians)', results.ratio, '', '<= 1'],
        ],
      ),
    );
    console.log(JSON.stringify({ bench: 'jobs', smoke: SMOKE, rounds: ROUNDS, ...results }));
    if (results.ratio > 1) process.exitCode = 1;
  } finally {
    await slipway.stop();
  }
}

await main();
