/**
 * Builds of real Node apps (test/fixtures/apps), each measured against a baseline in the same run:
 *  - the dependency cache: a service's second build of the same source (cached) against a cold one
 *    (through clearCache, after its first build), for express-hello-world built with `yarn` (the build
 *    command Render's example documents) and pm-npm (detected: `npm ci && npm run build`);
 *  - a static site's build overhead: the vite-react app built by Slipway (detected command,
 *    publishPath dist) against `npm ci && npm run build` run by hand, both cold (a new service; an
 *    empty npm cache and HOME), interleaved;
 *  - `npm start` to healthy, first and second start (bench/start-timing.ts, when present).
 * A build's duration is its deploy's build_started -> build_ended events (the service's events); each
 * ratio is the median of the rounds' ratios.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  fixtureArchive,
  freePort,
  log,
  median,
  repoRoot,
  signUp,
  sleep,
  startSlipway,
  table,
  type BenchCaller,
} from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
/** Cold/cached pairs per app, and by-hand/Slipway pairs for the static site. */
const CACHE_ROUNDS = SMOKE ? 1 : 3;
const STATIC_ROUNDS = SMOKE ? 1 : 5;
const UNFINISHED = new Set(['created', 'queued', 'build_in_progress', 'pre_deploy_in_progress', 'update_in_progress']);

/**
 * The apps whose cached builds are measured, each as Render would be told to build it. The target is
 * for a real dependency tree (express: ~70 packages); pm-npm has one dependency, so its builds are
 * mostly a build's fixed cost (sandbox, npm's start-up, the build script): shown, not targeted.
 */
const CACHE_APPS = [
  {
    fixture: 'express-hello-world',
    label: 'express-hello-world (yarn)',
    serviceDetails: { envSpecificDetails: { buildCommand: 'yarn', startCommand: 'node app.js' } },
    target: '<= 0.3',
  },
  { fixture: 'pm-npm', label: 'pm-npm (detected)', serviceDetails: {}, target: '' },
];

interface Slipway {
  call: BenchCaller;
  routerPort: number;
}

/** GET `pathname` of a service through Slipway's router, as a browser asking for `<slug>.localhost` would. */
function viaRouter(routerPort: number, slug: string, pathname = '/'): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(
        { host: '127.0.0.1', port: routerPort, path: pathname, headers: { host: `${slug}.localhost:${routerPort}` } },
        (res) => {
          let text = '';
          res
            .setEncoding('utf8')
            .on('data', (c: string) => (text += c))
            .on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      )
      .on('error', reject);
  });
}

/** Waits for a deploy to finish; throws unless it went live. Returns its build duration (build_started -> build_ended). */
async function builtAndLive(call: BenchCaller, serviceId: string, deployId: string): Promise<number> {
  const deadline = Date.now() + 20 * 60_000;
  let deploy: { status: string; failureReason?: string; buildOutput?: string };
  for (;;) {
    deploy = await call('GET', `/v1/services/${serviceId}/deploys/${deployId}`);
    if (!UNFINISHED.has(deploy.status)) break;
    if (Date.now() > deadline) throw new Error(`deploy ${deployId} still ${deploy.status} after 20 minutes`);
    await sleep(100);
  }
  if (deploy.status !== 'live') {
    const output = (deploy.buildOutput ?? '').trim().split('\n').slice(-15).join('\n');
    throw new Error(`deploy ended ${deploy.status}: ${deploy.failureReason ?? ''}\n${output}`);
  }
  const events = (await call(
    'GET',
    `/v1/services/${serviceId}/events?type=build_started&type=build_ended&limit=100`,
  )) as Array<{ event: { type: string; timestamp: string; details: { deployId?: string } } }>;
  const at = (type: string) => {
    const found = events.find((e) => e.event.type === type && e.event.details.deployId === deployId);
    if (!found) throw new Error(`no ${type} event for deploy ${deployId}`);
    return Date.parse(found.event.timestamp);
  };
  return at('build_ended') - at('build_started');
}

/** A service's first deploy of `fixture`: creates it, uploads the archive (autoDeploy), waits for live. */
async function createAndDeploy(s: Slipway, fixture: string, body: Record<string, unknown>) {
  const { service } = await s.call('POST', '/v1/services', body);
  const { deployId } = await s.call(
    'POST',
    `/v1/services/${service.id}/source/upload`,
    undefined,
    await fixtureArchive(fixture),
  );
  if (!deployId) throw new Error('the upload started no deploy');
  return {
    service: service as { id: string; slug: string },
    buildMs: await builtAndLive(s.call, service.id, deployId),
  };
}

/** The live app answers / with what its dependencies computed (the fixtures' JSON), so the build installed them. */
async function checkApp(s: Slipway, slug: string) {
  const res = await viaRouter(s.routerPort, slug);
  let body: { depVersion?: string } | undefined;
  try {
    body = JSON.parse(res.text);
  } catch {
    // not JSON: reported below
  }
  if (res.status !== 200 || !body?.depVersion)
    throw new Error(`the app answered ${res.status}: ${res.text.slice(0, 200)}`);
}

interface CacheResult {
  app: string;
  target: string;
  coldMs: number[];
  cachedMs: number[];
  /** cached / cold of each pair. */
  ratios: number[];
  error?: string;
}

/** First (cold) build against a second build of the same source (cached), CACHE_ROUNDS times; cold again through clearCache. */
async function cacheScenario(s: Slipway, app: (typeof CACHE_APPS)[number]): Promise<CacheResult> {
  const result: CacheResult = { app: app.label, target: app.target, coldMs: [], cachedMs: [], ratios: [] };
  let serviceId: string | undefined;
  try {
    const first = await createAndDeploy(s, app.fixture, {
      type: 'web_service',
      name: `bench-${app.fixture}`,
      serviceDetails: { runtime: 'node', healthCheckPath: '/healthz', numInstances: 1, ...app.serviceDetails },
    });
    const { service } = first;
    serviceId = service.id;
    await checkApp(s, service.slug);
    const deploy = async (clearCache: 'clear' | 'do_not_clear') => {
      const d = await s.call('POST', `/v1/services/${service.id}/deploys`, { clearCache });
      const ms = await builtAndLive(s.call, service.id, d.id);
      await checkApp(s, service.slug);
      return ms;
    };
    for (let round = 0; round < CACHE_ROUNDS; round++) {
      // Not the first build: it may download the Node.js release the app asks for (express-hello-world's
      // engines.node), a cost paid once per machine, not per build.
      const cold = await deploy('clear');
      const cached = await deploy('do_not_clear');
      result.coldMs.push(cold);
      result.cachedMs.push(cached);
      result.ratios.push(cached / cold);
      log(`${app.label}: cold ${cold} ms, cached ${cached} ms`);
    }
  } catch (err) {
    result.error = (err as Error).message;
    log(`${app.label}: ${result.error}`);
  } finally {
    if (serviceId) await s.call('DELETE', `/v1/services/${serviceId}`).catch(() => undefined);
  }
  return result;
}

/** Runs `command` in a shell in `cwd`; resolves with its wall time, rejects on a non-zero exit (with its output's tail). */
function timedShell(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0
        ? resolve(performance.now() - started)
        : reject(new Error(`${command} exited with ${code ?? signal}:\n${output}`)),
    );
  });
}

/** vite-react built by hand, cold: a fresh copy, an empty npm cache and HOME (as a Slipway build's throwaway HOME). */
async function staticByHand(): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-by-hand-'));
  try {
    const app = path.join(dir, 'app');
    const home = path.join(dir, 'home');
    cpSync(path.join(repoRoot, 'test/fixtures/apps/vite-react'), app, { recursive: true });
    const env = { ...process.env, HOME: home, npm_config_cache: path.join(home, '.npm') };
    const ms = await timedShell('npm ci && npm run build', app, env);
    if (!existsSync(path.join(app, 'dist/index.html'))) throw new Error('the build by hand made no dist/index.html');
    return ms;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** vite-react built by Slipway, cold: a new static site (so no dependency cache), build command detected. */
async function staticBySlipway(s: Slipway, round: number): Promise<number> {
  const { service, buildMs } = await createAndDeploy(s, 'vite-react', {
    type: 'static_site',
    name: `bench-vite-react-${round}`,
    serviceDetails: { publishPath: 'dist' },
  });
  try {
    const page = await viaRouter(s.routerPort, service.slug);
    if (page.status !== 200 || !page.text.includes('fixture-vite-react'))
      throw new Error(`the site answered ${page.status}: ${page.text.slice(0, 200)}`);
  } finally {
    await s.call('DELETE', `/v1/services/${service.id}`).catch(() => undefined);
  }
  return buildMs;
}

interface StaticResult {
  slipwayMs: number[];
  byHandMs: number[];
  /** slipway / by hand of each pair. */
  ratios: number[];
  error?: string;
}

/** Slipway and by hand in turns, the order alternating, so drift on a shared machine falls on both. */
async function staticScenario(s: Slipway): Promise<StaticResult> {
  const result: StaticResult = { slipwayMs: [], byHandMs: [], ratios: [] };
  try {
    for (let round = 0; round < STATIC_ROUNDS; round++) {
      let slipway = 0;
      let byHand = 0;
      if (round % 2 === 0) {
        byHand = await staticByHand();
        slipway = await staticBySlipway(s, round);
      } else {
        slipway = await staticBySlipway(s, round);
        byHand = await staticByHand();
      }
      result.slipwayMs.push(slipway);
      result.byHandMs.push(byHand);
      result.ratios.push(slipway / byHand);
      log(`vite-react: slipway ${slipway} ms, by hand ${Math.round(byHand)} ms`);
    }
  } catch (err) {
    result.error = (err as Error).message;
    log(`vite-react: ${result.error}`);
  }
  return result;
}

interface StartTiming {
  compileMs: number;
  firstStartMs: number;
  secondStartMs: number;
}

/** bench/start-timing.ts's measureNpmStart, when that file is there (a path, not a literal, so this compiles without it). */
async function npmStartScenario(): Promise<StartTiming | { error: string } | undefined> {
  const file = path.join(repoRoot, 'bench/start-timing.ts');
  if (!existsSync(file)) return undefined;
  try {
    const { measureNpmStart } = (await import(pathToFileURL(file).href)) as {
      measureNpmStart(): Promise<StartTiming>;
    };
    return await measureNpmStart();
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const round = (n: number) => Math.round(n);
const ratio = (n: number) => Number(n.toFixed(3));
const failed = (error: string) => `failed: ${error.split('\n')[0]!.slice(0, 80)}`;

async function main() {
  const routerPort = await freePort();
  const slipway = await startSlipway({ SLIPWAY_ROUTER_PORT: String(routerPort) });
  const cache: CacheResult[] = [];
  let statics: StaticResult;
  try {
    const { call } = await signUp(slipway.url);
    const s = { call, routerPort };
    for (const app of CACHE_APPS) cache.push(await cacheScenario(s, app));
    statics = await staticScenario(s);
  } finally {
    await slipway.stop();
  }
  // After Slipway has stopped: it starts its own.
  const start = await npmStartScenario();

  const rows: Array<Array<string | number>> = [];
  for (const c of cache) {
    if (c.error && c.ratios.length === 0) {
      rows.push([`${c.app}: cached / first build`, failed(c.error), c.target]);
      continue;
    }
    rows.push(
      [`${c.app}: first build median (ms)`, round(median(c.coldMs)), ''],
      [`${c.app}: cached build median (ms)`, round(median(c.cachedMs)), ''],
      [`${c.app}: cached / first build`, ratio(median(c.ratios)), c.target],
    );
  }
  if (statics.ratios.length === 0) {
    rows.push(['vite-react: slipway / by hand, cold', failed(statics.error ?? 'no rounds'), '<= 1.2']);
  } else {
    rows.push(
      ['vite-react: slipway build median (ms)', round(median(statics.slipwayMs)), ''],
      ['vite-react: by hand (npm ci && npm run build) median (ms)', round(median(statics.byHandMs)), ''],
      ['vite-react: slipway / by hand, cold', ratio(median(statics.ratios)), '<= 1.2'],
    );
  }
  if (!start) {
    rows.push(['npm start -> healthy', 'not measured (no bench/start-timing.ts)', '']);
  } else if ('error' in start) {
    rows.push(['npm start -> healthy', failed(start.error), '']);
  } else {
    rows.push(
      ['npm start: compile (ms)', round(start.compileMs), ''],
      ['npm start -> healthy, first start (ms)', round(start.firstStartMs), '<= 10000'],
      ['npm start -> healthy, second start (ms)', round(start.secondStartMs), '<= 5000'],
    );
  }
  console.log(table(['measure', 'value', 'target'], rows));
  console.log(
    JSON.stringify({
      bench: 'builds',
      smoke: SMOKE,
      buildTime: 'build_started -> build_ended events',
      cache: cache.map((c) => ({
        app: c.app,
        coldMs: c.coldMs,
        cachedMs: c.cachedMs,
        ratio: c.ratios.length ? ratio(median(c.ratios)) : null,
        ...(c.error ? { error: c.error } : {}),
      })),
      staticSite: {
        app: 'vite-react',
        comparison: 'both cold',
        slipwayMs: statics.slipwayMs,
        byHandMs: statics.byHandMs.map(round),
        ratio: statics.ratios.length ? ratio(median(statics.ratios)) : null,
        ...(statics.error ? { error: statics.error } : {}),
      },
      npmStart: start ?? null,
    }),
  );
  // A build that did not go live is a defect, not a missed target.
  if (cache.some((c) => c.error) || statics.error || (start && 'error' in start)) process.exitCode = 1;
}

await main();
