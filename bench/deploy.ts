/**
 * Deploy speed and zero downtime on the fixture Node app (no build step): trigger->live and
 * rollback->live times, restart duration, failed requests under load during back-to-back
 * deploys, and router throughput against the same app hit directly (the ratio). Run twice when
 * this machine can make namespaces: on the shared network (the baseline) and with a namespace per
 * instance, whose cost is the ratio of the two.
 */
import autocannon from 'autocannon';
import http from 'node:http';
import { namespaceAddress } from '../test/helpers/network.js';
import {
  fixtureArchive,
  freePort,
  liveFixtureService,
  log,
  median,
  percentile,
  signUp,
  startSlipway,
  table,
  waitLive,
} from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const DEPLOYS = SMOKE ? 3 : 20;
const LOAD_S = SMOKE ? 2 : 10;

/** Where an instance is reached directly: its namespace's address (from Slipway's lease files). */
function instanceAddress(instanceId: string): string {
  const address = namespaceAddress(instanceId);
  if (!address) throw new Error(`no namespace address for ${instanceId}`);
  return address;
}

type Network = 'shared' | 'namespaces';

/** Issue 30's figures before this work (a quiet machine, namespaces and nginx), printed beside today's. */
const BEFORE = { triggerToLiveMs: '514-935', noopBuildMs: '150-180' };

/** How long a deploy's build step took: its build_started to its build_ended event. */
async function buildStepMs(call: Setup['call'], serviceId: string, deployId: string): Promise<number> {
  const events = (await call('GET', `/v1/services/${serviceId}/events?limit=20`)) as Array<{
    event: { type: string; timestamp: string; details?: Record<string, unknown> };
  }>;
  const at = (type: string) =>
    Date.parse(
      events.find((e) => e.event.type === type && JSON.stringify(e.event.details).includes(deployId))!.event.timestamp,
    );
  return at('build_ended') - at('build_started');
}

/** A no-op build (`buildCommand: true`, the fixture app): its build step, over a few deploys. */
async function timeNoopBuilds({ call, waitLive }: Setup): Promise<number[]> {
  const { service } = await call('POST', '/v1/services', {
    type: 'web_service',
    name: 'noop-build',
    serviceDetails: { runtime: 'node', healthCheckPath: '/healthz', envSpecificDetails: { buildCommand: 'true' } },
  });
  const first = await call(
    'POST',
    `/v1/services/${service.id}/source/upload`,
    undefined,
    await fixtureArchive('node-web'),
  );
  await waitLive(service.id, first.deployId);
  const times: number[] = [];
  // As many as the trigger->live deploys: a median of five swung by a third between runs on a noisy machine.
  for (let i = 0; i < DEPLOYS; i++) {
    const d = await call('POST', `/v1/services/${service.id}/deploys`, {});
    await waitLive(service.id, d.id);
    times.push(await buildStepMs(call, service.id, d.id));
  }
  await call('DELETE', `/v1/services/${service.id}`);
  return times;
}

/** A Slipway on `network` with the fixture app live on it. */
async function setUp(network: Network) {
  log(`== network: ${network}`);
  const routerPort = await freePort();
  const slipway = await startSlipway({ SLIPWAY_ROUTER_PORT: String(routerPort), SLIPWAY_NETWORK: network });
  try {
    const { call } = await signUp(slipway.url);
    const live = (serviceId: string, deployId: string) => waitLive(call, serviceId, deployId, 10);
    const { service, deployId } = await liveFixtureService(call, 'bench-app', 10);
    return { network, slipway, routerPort, call, waitLive: live, service, deployIds: [deployId] };
  } catch (err) {
    await slipway.stop();
    throw err;
  }
}
type Setup = Awaited<ReturnType<typeof setUp>>;

const timed = async (work: () => Promise<void>) => {
  const start = performance.now();
  await work();
  return performance.now() - start;
};

/**
 * Trigger->live on each network, one deploy on each in turn: the machine's other load (a CI run, say) then weighs on
 * both alike, and their ratio is the namespaces' own cost.
 */
async function timeDeploys(setups: Setup[]): Promise<number[][]> {
  const times = setups.map(() => [] as number[]);
  for (let i = 0; i < DEPLOYS; i++)
    for (const [n, { call, waitLive, service, deployIds }] of setups.entries())
      times[n]!.push(
        await timed(async () => {
          const d = await call('POST', `/v1/services/${service.id}/deploys`, {});
          deployIds.push(d.id);
          await waitLive(service.id, d.id);
        }),
      );
  return times;
}

async function scenario(setup: Setup, deployTimes: number[]) {
  const { network, slipway, routerPort, call, waitLive, service, deployIds } = setup;
  const host = (slug: string) => `${slug}.localhost:${routerPort}`;
  try {
    // Back and forth between the two newest builds: each rollback starts a kept artifact, no build.
    const rollbackTimes: number[] = [];
    for (let i = 0; i < Math.min(5, DEPLOYS); i++) {
      rollbackTimes.push(
        await timed(async () => {
          const d = await call('POST', `/v1/services/${service.id}/rollback`, {
            deployId: deployIds[deployIds.length - 1 - (i % 2)]!,
          });
          await waitLive(service.id, d.id);
        }),
      );
    }
    const noopBuildTimes = await timeNoopBuilds(setup);
    const restartTimes: number[] = [];
    for (let i = 0; i < Math.min(5, DEPLOYS); i++)
      restartTimes.push(await timed(() => call('POST', `/v1/services/${service.id}/restart`)));

    // Failed requests while deploying back to back under load through the router.
    let deploying = true;
    let finish: (r: autocannon.Result) => void = () => undefined;
    const loadDone = new Promise<autocannon.Result>((resolve) => (finish = resolve));
    const underLoad = autocannon(
      {
        url: `http://127.0.0.1:${routerPort}/`,
        headers: { host: host(service.slug) },
        connections: 20,
        duration: 3600,
      },
      (err, r) => {
        if (err) throw err;
        finish(r);
      },
    );
    const loadDeploys = (async () => {
      for (let i = 0; i < DEPLOYS; i++)
        await waitLive(service.id, (await call('POST', `/v1/services/${service.id}/deploys`, {})).id);
      deploying = false;
      underLoad.stop();
    })();
    const loadResult = await loadDone;
    await loadDeploys;
    if (deploying) throw new Error('load ended before the deploys');
    const failed = loadResult.errors + loadResult.timeouts + loadResult.non2xx;

    // Router vs direct, same app, same connections.
    const direct = await new Promise<{ instance: string; env: { PORT: string } }>((resolve, reject) => {
      // Through the router once, to learn the instance's own port.
      http
        .get({ host: '127.0.0.1', port: routerPort, path: '/', headers: { host: host(service.slug) } }, (res) => {
          let text = '';
          res
            .setEncoding('utf8')
            .on('data', (c: string) => (text += c))
            .on('end', () => resolve(JSON.parse(text)));
        })
        .on('error', reject);
    });
    const measure = (url: string, headers: Record<string, string> = {}) =>
      autocannon({ url, headers, connections: 50, duration: LOAD_S });
    const viaDirect = await measure(
      `http://${network === 'namespaces' ? instanceAddress(direct.instance) : '127.0.0.1'}:${direct.env.PORT}/`,
    );
    const viaRouter = await measure(`http://127.0.0.1:${routerPort}/`, { host: host(service.slug) });
    await call('DELETE', `/v1/services/${service.id}`);

    return {
      deploys: DEPLOYS,
      triggerToLiveMs: { median: Math.round(median(deployTimes)), p95: Math.round(percentile(deployTimes, 95)) },
      noopBuildMs: { median: Math.round(median(noopBuildTimes)) },
      rollbackToLiveMs: { median: Math.round(median(rollbackTimes)) },
      restartMs: { median: Math.round(median(restartTimes)) },
      underLoad: { requests: loadResult.requests.total, failed },
      router: {
        reqPerSec: Math.round(viaRouter.requests.average),
        p99Ms: viaRouter.latency.p99,
        errors: viaRouter.errors + viaRouter.non2xx,
      },
      direct: { reqPerSec: Math.round(viaDirect.requests.average), p99Ms: viaDirect.latency.p99 },
      routerRatio: Number((viaRouter.requests.average / viaDirect.requests.average).toFixed(3)),
    };
  } finally {
    await slipway.stop();
  }
}

async function main() {
  const setups = [await setUp('shared')];
  if (process.getuid?.() === 0) setups.push(await setUp('namespaces'));
  const times = await timeDeploys(setups).catch(async (err) => {
    await Promise.all(setups.map((s) => s.slipway.stop()));
    throw err;
  });
  const shared = await scenario(setups[0]!, times[0]!);
  const namespaced = setups[1] && (await scenario(setups[1], times[1]!));
  const results = namespaced ?? shared;
  const runs = namespaced ? [shared, namespaced] : [shared];
  const ratio = (a: number, b: number) => Number((a / b).toFixed(3));
  const namespaceCost = namespaced && {
    /** Shared over namespaced: 1 means a namespace costs nothing, lower means slower. */
    triggerToLive: ratio(shared.triggerToLiveMs.median, namespaced.triggerToLiveMs.median),
    routerThroughput: ratio(namespaced.router.reqPerSec, shared.router.reqPerSec),
  };
  log(
    table(
      ['measure', 'value', 'target'],
      [
        ['trigger->live median (ms)', results.triggerToLiveMs.median, `<= 250 (before: ${BEFORE.triggerToLiveMs})`],
        ['no-op build median (ms)', results.noopBuildMs.median, `<= 50 (before: ${BEFORE.noopBuildMs})`],
        ['trigger->live p95 (ms)', results.triggerToLiveMs.p95, ''],
        ['rollback->live median (ms)', results.rollbackToLiveMs.median, '<= 1000'],
        ['restart median (ms)', results.restartMs.median, ''],
        [
          `failed requests during ${DEPLOYS} deploys`,
          `${results.underLoad.failed} of ${results.underLoad.requests}`,
          '0',
        ],
        ['router req/s (p99 ms)', `${results.router.reqPerSec} (${results.router.p99Ms})`, ''],
        ['direct req/s (p99 ms)', `${results.direct.reqPerSec} (${results.direct.p99Ms})`, ''],
        ['router / direct', results.routerRatio, '>= 0.6'],
        ...(namespaceCost
          ? [
              ['shared: trigger->live median (ms)', shared.triggerToLiveMs.median, ''],
              ['shared: router req/s', shared.router.reqPerSec, ''],
              [
                `shared: failed requests during ${DEPLOYS} deploys`,
                `${shared.underLoad.failed} of ${shared.underLoad.requests}`,
                '0',
              ],
              ['namespaces / shared: trigger->live speed', namespaceCost.triggerToLive, '>= 0.9'],
              ['namespaces / shared: router req/s', namespaceCost.routerThroughput, '>= 0.9'],
            ]
          : [['namespaces', 'not measured (needs root)', '']]),
      ],
    ),
  );
  console.log(
    JSON.stringify({
      bench: 'deploy',
      smoke: SMOKE,
      network: namespaced ? 'namespaces' : 'shared',
      ...results,
      before: BEFORE,
      shared,
      namespaceCost,
    }),
  );
  if (runs.some((r) => r.underLoad.failed > 0 || r.router.errors > 0)) process.exitCode = 1;
}

await main();
