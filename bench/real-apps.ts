/**
 * Render's example apps as a new user deploys them (test/fixtures/apps, each named after the repository it copies):
 * trigger→live of the first build and of the second (its dependency cache warm), and the disk each kept deploy adds
 * (artifacts share unchanged files), against the fixture Node app with no build step as the baseline in the same run.
 * Full runs also time `npm ci` of Slipway itself from a clean npm cache (the install a new user waits for).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  fixtureArchive,
  log,
  median,
  repoRoot,
  signUp,
  startSlipway,
  table,
  waitLive,
  type BenchCaller,
} from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
/** Deploys kept per app for the disk figure (SLIPWAY_KEEP_ARTIFACTS is 5). */
const KEPT = SMOKE ? 3 : 5;

interface App {
  fixture: string;
  type: 'web_service' | 'static_site';
  details?: Record<string, unknown>;
  /** Needs the npm registry (full runs only). */
  registry?: boolean;
}
const APPS: App[] = [
  { fixture: 'node-web', type: 'web_service', details: { runtime: 'node' } }, // the baseline: no build step
  { fixture: 'fastify-hello-world', type: 'web_service', details: { runtime: 'node' } },
  { fixture: 'hapi-quick-start', type: 'web_service', details: { runtime: 'node' } }, // a hard-coded port, detected
  {
    fixture: 'create-react-app',
    type: 'static_site',
    details: { buildCommand: 'npm run build', publishPath: 'build' },
  },
  {
    fixture: 'express-hello-world',
    type: 'web_service',
    details: { runtime: 'node', envSpecificDetails: { buildCommand: 'yarn', startCommand: 'node app.js' } },
    registry: true,
  },
];

const timed = async (work: () => Promise<void>) => {
  const start = performance.now();
  await work();
  return performance.now() - start;
};

/** Uploads `archive` as a new deploy of the service and waits until it is live: its trigger→live in ms. */
const deployOnce = (call: BenchCaller, serviceId: string, archive: Buffer) =>
  timed(async () => {
    const up = await call('POST', `/v1/services/${serviceId}/source/upload`, undefined, archive);
    await waitLive(call, serviceId, up.deployId, 10);
  });

const kib = (...dirs: string[]) =>
  Number(
    execFileSync('du', ['-s', '-k', '-c', '--', ...dirs], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .at(-1)!
      .split('\t')[0],
  );

async function measure(call: BenchCaller, dataDir: string, app: App) {
  const { service } = await call('POST', '/v1/services', {
    type: app.type,
    name: `bench-${app.fixture}`,
    serviceDetails: app.details ?? {},
  });
  const times: number[] = [];
  // Each deploy changes one small file, as a commit would: the rest of the artifact is shared.
  for (let i = 0; i < KEPT; i++)
    times.push(await deployOnce(call, service.id, await fixtureArchive(app.fixture, { VERSION: String(i) })));
  const artifacts = path.join(dataDir, 'services', service.id, 'artifacts');
  const dirs = readdirSync(artifacts).map((d) => path.join(artifacts, d));
  const one = kib(dirs[0]!);
  const all = kib(...dirs);
  await call('DELETE', `/v1/services/${service.id}`);
  return { first: times[0]!, second: median(times.slice(1)), oneKib: one, perKeptKib: (all - one) / (dirs.length - 1) };
}

/** `npm ci` of this repository in a temp copy, with an empty npm cache: what a new user waits for. */
function npmCiSeconds(): number {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-npm-ci-'));
  try {
    cpSync(path.join(repoRoot, 'package-lock.json'), path.join(dir, 'package-lock.json'));
    // Without `prepare` (tsc over sources the copy does not have); the dependencies' own install scripts still run.
    const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
    delete manifest.scripts.prepare;
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest));
    const started = performance.now();
    const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--cache', path.join(dir, '.npm-cache')], {
      cwd: dir,
      stdio: 'ignore',
    });
    if (result.status !== 0) throw new Error(`npm ci failed (${result.status})`);
    return (performance.now() - started) / 1000;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Array<{ app: string } & Awaited<ReturnType<typeof measure>>> = [];
const slipway = await startSlipway();
try {
  const { call } = await signUp(slipway.url);
  const rows: Array<Array<string | number>> = [];
  let baseline: number | undefined;
  for (const app of APPS.filter((a) => !SMOKE || !a.registry)) {
    const m = await measure(call, slipway.dataDir, app);
    baseline ??= m.second;
    results.push({ app: app.fixture, ...m });
    rows.push([
      app.fixture,
      Math.round(m.first),
      Math.round(m.second),
      `×${(m.second / baseline).toFixed(1)}`,
      m.oneKib,
      Math.round(m.perKeptKib),
      `${((100 * m.perKeptKib) / Math.max(1, m.oneKib)).toFixed(0)}%`,
    ]);
  }
  log(
    table(
      [
        'app',
        'first build→live ms',
        'second build→live ms',
        'second vs node-web',
        'artifact KiB',
        'KiB per kept deploy',
        'of one artifact',
      ],
      rows,
    ),
  );
} finally {
  await slipway.stop();
}
const npmCi = SMOKE ? undefined : npmCiSeconds();
if (npmCi !== undefined) log(`npm ci of Slipway from a clean npm cache: ${npmCi.toFixed(1)} s (target: under 120 s)`);
console.log(JSON.stringify({ bench: 'real-apps', smoke: SMOKE, kept: KEPT, results, npmCiSeconds: npmCi }));
