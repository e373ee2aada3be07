/**
 * GitHub push-to-deploy, against the fake GitHub the tests use (Octokit and git http-backend behind it):
 * 1. A signed push webhook received → its deploy in `build_in_progress`, p50/p99 over 50 pushes, interleaved with the
 *    same deploy triggered through the API (`POST …/deploys {commitId}`), the baseline; each deploy is then canceled.
 * 2. Webhook handling at 100 deliveries/s (pushes to a branch no service follows, so each is verified, recorded and
 *    matched, but deploys nothing): every delivery answered 200 and recorded once (no loss), and its p99.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeGitHub } from '../test/helpers/fake-github.js';
import { log, median, percentile, repoRoot, signUp, sleep, startSlipway, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const PUSHES = SMOKE ? 10 : 50;
const RATE = 100;
const FLOOD_SECONDS = SMOKE ? 2 : 5;

const root = mkdtempSync(path.join(tmpdir(), 'slipway-bench-gh-'));
const gh = await startFakeGitHub(root);
gh.addInstallation(42, 'acme', ['app']);
const bare = path.join(root, 'acme', 'app.git');
mkdirSync(bare, { recursive: true });
execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', bare]);
const work = path.join(root, 'work');
cpSync(path.join(repoRoot, 'test/fixtures/apps/node-web'), work, { recursive: true });
const git = (...args: string[]) =>
  execFileSync('git', ['-C', work, '-c', 'user.name=b', '-c', 'user.email=b@example.com', ...args], {
    encoding: 'utf8',
  }).trim();
git('init', '--quiet', '--initial-branch=main');
git('add', '.');
git('commit', '--quiet', '-m', 'bench');
git('push', '--quiet', bare, 'main');
const head = git('rev-parse', 'HEAD');

const slipway = await startSlipway({
  ...gh.appEnv(),
  SLIPWAY_GIT_POLL_INTERVAL_MS: '0',
});
try {
  const { call, headers } = await signUp(slipway.url);
  const install = await fetch(`${slipway.url}/v1/github/install`, { headers, redirect: 'manual' });
  const state = new URL(install.headers.get('location')!).searchParams.get('state')!;
  await call('GET', `/v1/github/callback?installation_id=42&state=${state}&code=${gh.installCode([42])}`);
  const created = await call('POST', '/v1/services', {
    type: 'web_service',
    name: 'bench-gh',
    repo: `${gh.url}/acme/app.git`,
    branch: 'main',
    serviceDetails: { runtime: 'node' },
  });
  const serviceId: string = created.service.id;
  /** Polls the deploy until it leaves the queue; returns when it was seen building. */
  const building = async (deployId: string) => {
    for (;;) {
      const d = await call('GET', `/v1/services/${serviceId}/deploys/${deployId}`);
      if (!['created', 'queued'].includes(d.status)) return;
      await sleep(2);
    }
  };
  const settle = async (deployId: string) => {
    await call('POST', `/v1/services/${serviceId}/deploys/${deployId}/cancel`).catch(() => undefined);
    for (;;) {
      const d = await call('GET', `/v1/services/${serviceId}/deploys/${deployId}`);
      if (['live', 'canceled', 'build_failed', 'update_failed', 'deactivated'].includes(d.status)) return;
      await sleep(20);
    }
  };
  await settle(created.deployId);

  log(`${PUSHES} pushes, interleaved with as many API triggers`);
  const viaPush: number[] = [];
  const viaApi: number[] = [];
  // Each a push of its own, as GitHub's are: the same body again is a replay, and deploys nothing.
  const payload = (branch: string) => ({
    ref: `refs/heads/${branch}`,
    before: randomBytes(20).toString('hex'),
    after: head,
    installation: { id: 42 },
    repository: { html_url: `${gh.url}/acme/app`, default_branch: 'main', pushed_at: Math.floor(Date.now() / 1000) },
    commits: [{ id: head, modified: ['server.js'] }],
  });
  for (let i = 0; i < PUSHES; i++) {
    let start = performance.now();
    const pushed = await gh.deliver(slipway.url, 'push', payload('main'));
    if (pushed.status !== 200 || pushed.body.deploys?.length !== 1) throw new Error(`push: ${JSON.stringify(pushed)}`);
    await building(pushed.body.deploys[0]);
    viaPush.push(performance.now() - start);
    await settle(pushed.body.deploys[0]);

    start = performance.now();
    const triggered = await call('POST', `/v1/services/${serviceId}/deploys`, { commitId: head });
    await building(triggered.id);
    viaApi.push(performance.now() - start);
    await settle(triggered.id);
  }

  log(`${RATE} deliveries/s for ${FLOOD_SECONDS} s`);
  const latencies: number[] = [];
  let refused = 0;
  const sends: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < RATE * FLOOD_SECONDS; i++) {
    const wait = t0 + (i * 1000) / RATE - performance.now();
    if (wait > 0) await sleep(wait);
    const start = performance.now();
    sends.push(
      gh.deliver(slipway.url, 'push', payload('no-service-here')).then((r) => {
        if (r.status !== 200 || r.body.duplicate !== false) refused++;
        latencies.push(performance.now() - start);
      }),
    );
  }
  await Promise.all(sends);
  const achieved = latencies.length / ((performance.now() - t0) / 1000);

  const fmt = (n: number) => Math.round(n * 10) / 10;
  const rows: Array<Array<string | number>> = [
    ['push webhook -> build_in_progress p50 / p99 (ms)', `${fmt(median(viaPush))} / ${fmt(percentile(viaPush, 99))}`],
    ['API trigger -> build_in_progress p50 / p99 (ms)', `${fmt(median(viaApi))} / ${fmt(percentile(viaApi, 99))}`],
    ['push / API (p50)', fmt(median(viaPush) / median(viaApi))],
    [`deliveries at ${RATE}/s: answered / lost`, `${latencies.length - refused} / ${refused}`],
    ['delivery p50 / p99 (ms)', `${fmt(median(latencies))} / ${fmt(percentile(latencies, 99))}`],
    ['deliveries/s achieved', fmt(achieved)],
  ];
  console.log(table(['measure', 'value'], rows));
  console.log(
    JSON.stringify({
      bench: 'github',
      smoke: SMOKE,
      pushes: PUSHES,
      pushMs: { p50: fmt(median(viaPush)), p99: fmt(percentile(viaPush, 99)) },
      apiMs: { p50: fmt(median(viaApi)), p99: fmt(percentile(viaApi, 99)) },
      ratio: fmt(median(viaPush) / median(viaApi)),
      flood: {
        rate: RATE,
        seconds: FLOOD_SECONDS,
        lost: refused,
        p50: fmt(median(latencies)),
        p99: fmt(percentile(latencies, 99)),
      },
    }),
  );
} finally {
  await slipway.stop();
  await gh.close();
  rmSync(root, { recursive: true, force: true });
}
