/**
 * Docker services on Podman (issue 32) against the same app run natively, on one Slipway in one run:
 * 1. a docker service's first build against a rebuild after one source file changed (the dependency layers cached):
 *    trigger->live, as bench/deploy.ts times a deploy, with each build's own step (build_started->build_ended) beside
 *    it; ratio cached / first (target <= 0.3);
 * 2. a restart (POST /v1/services/:id/restart, which answers once the new instance is healthy and routed, as
 *    bench/deploy.ts times it) of the live docker service against the same of a native (`runtime: node`) service of
 *    the fixture app, interleaved, each service settled (its old instance stopped) before the next restart; ratio
 *    container / native (target <= 2);
 * 3. the router's req/s to the container against to the native instance (autocannon, as bench/router.ts loads it,
 *    `/healthz`, 50 keep-alive connections), interleaved, the order swapped each round; ratio container / native
 *    (target >= 0.9). Beside it, the same load straight to each instance's namespace address (no router), which
 *    tells a gap of the router's path from one of the instance itself.
 * The base image is made from this machine's files and pushed to a local registry on a host address, as
 * test/containers.test.ts does (test/helpers/containers.ts): no internet. Skipped where there is no container
 * engine (Podman, runc, docker-registry, busybox). PGlite only: the store is not on any of these paths.
 */
import autocannon from 'autocannon';
import http from 'node:http';
import { hasContainerEngine, startRegistry, type TestRegistry } from '../test/helpers/containers.js';
import { hostAddresses, namespaceAddress } from '../test/helpers/network.js';
import {
  fixtureArchive,
  freePort,
  liveFixtureService,
  log,
  median,
  signUp,
  sleep,
  startSlipway,
  table,
  type BenchCaller,
  type RunningSlipway,
} from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
/** Docker services built from cold (each its own layer cache), and rebuilds of each after a source change. */
const FIRST_BUILDS = SMOKE ? 1 : 3;
const REBUILDS_EACH = SMOKE ? 1 : 2;
const RESTARTS = SMOKE ? 1 : 5;
const LOAD_ROUNDS = SMOKE ? 1 : 4;
const LOAD_S = SMOKE ? 2 : 5;
const CONNECTIONS = 50;
const DEPLOY_TIMEOUT_MS = 300_000;

/**
 * test/containers.test.ts's Dockerfile shape: the dependency layer (package.json, then a RUN that stands for the
 * install, since no package registry is reachable: it writes a node_modules of 100 packages of 10 files of 4 KiB,
 * 4 MiB), then the source. A change to any source file rebuilds from `COPY . .` on.
 */
const dockerfile = (base: string) => `FROM ${base}
WORKDIR /app
COPY package.json ./
RUN node -e "const fs=require('fs');for(let p=0;p<100;p++){const d='node_modules/dep'+p;fs.mkdirSync(d,{recursive:true});for(let f=0;f<10;f++)fs.writeFileSync(d+'/f'+f+'.js','//'+'x'.repeat(4094)+'\\n')}" && echo "installed at $(date +%s%N)" > /app/deps.txt
COPY . .
CMD ["node", "server.js"]
`;

const timed = async (work: () => Promise<unknown>) => {
  const start = performance.now();
  await work();
  return performance.now() - start;
};

/** Polls a deploy until it is live; throws when it ends any other way or takes longer than DEPLOY_TIMEOUT_MS. */
async function live(call: BenchCaller, serviceId: string, deployId: string): Promise<void> {
  const deadline = Date.now() + DEPLOY_TIMEOUT_MS;
  for (;;) {
    const d = await call('GET', `/v1/services/${serviceId}/deploys/${deployId}`);
    if (d.status === 'live') return;
    if (['build_failed', 'update_failed', 'canceled', 'pre_deploy_failed', 'deactivated'].includes(d.status))
      throw new Error(`deploy ${deployId} ended ${d.status}: ${d.failureReason}`);
    if (Date.now() > deadline)
      throw new Error(`deploy ${deployId} not live within ${DEPLOY_TIMEOUT_MS} ms: ${d.status}`);
    await sleep(20);
  }
}

/** How long a deploy's build step took: its build_started to its build_ended event (as bench/deploy.ts reads it). */
async function buildStepMs(call: BenchCaller, serviceId: string, deployId: string): Promise<number> {
  const events = (await call('GET', `/v1/services/${serviceId}/events?limit=50`)) as Array<{
    event: { type: string; timestamp: string; details?: Record<string, unknown> };
  }>;
  const at = (type: string) => {
    const found = events.find((e) => e.event.type === type && JSON.stringify(e.event.details).includes(deployId));
    if (!found) throw new Error(`no ${type} event for deploy ${deployId}`);
    return Date.parse(found.event.timestamp);
  };
  return at('build_ended') - at('build_started');
}

interface Build {
  triggerToLiveMs: number;
  buildMs: number;
}

/** Uploads `archive` to the service (the trigger) and waits for that deploy to be live. */
async function deployUpload(call: BenchCaller, serviceId: string, archive: Buffer): Promise<Build> {
  let deployId = '';
  const triggerToLiveMs = await timed(async () => {
    const up = await call('POST', `/v1/services/${serviceId}/source/upload`, undefined, archive);
    deployId = up.deployId;
    await live(call, serviceId, deployId);
  });
  return { triggerToLiveMs, buildMs: await buildStepMs(call, serviceId, deployId) };
}

/**
 * Docker services from cold, each then rebuilt after a change to its VERSION file; the last is kept live. `services`
 * holds the ids of those not yet deleted, for the cleanup of a bench that fails mid-way.
 */
async function measureBuilds(call: BenchCaller, base: string, services: string[]) {
  const first: Build[] = [];
  const cached: Build[] = [];
  let kept: { id: string; slug: string } | undefined;
  for (let i = 0; i < FIRST_BUILDS; i++) {
    const { service } = await call('POST', '/v1/services', {
      type: 'web_service',
      name: `bench-docker-${i}`,
      serviceDetails: { runtime: 'docker', healthCheckPath: '/healthz', numInstances: 1 },
    });
    services.push(service.id);
    const archive = (version: string) => fixtureArchive('node-web', { Dockerfile: dockerfile(base), VERSION: version });
    const cold = await deployUpload(call, service.id, await archive('v0'));
    first.push(cold);
    log(`docker service ${i}: first build ${Math.round(cold.triggerToLiveMs)} ms (build step ${cold.buildMs} ms)`);
    for (let r = 1; r <= REBUILDS_EACH; r++) {
      await settled(call, service.id);
      const warm = await deployUpload(call, service.id, await archive(`v${r}`));
      cached.push(warm);
      log(`docker service ${i}: rebuild ${r} ${Math.round(warm.triggerToLiveMs)} ms (build step ${warm.buildMs} ms)`);
    }
    if (kept) {
      await call('DELETE', `/v1/services/${kept.id}`);
      services.splice(services.indexOf(kept.id), 1);
    }
    kept = service;
  }
  return { first, cached, docker: kept! };
}

/**
 * Until the service runs its one instance only (an old one drained and stopped: `podman stop` and `rm` for a
 * container), so that no stopping work of one measure weighs on the next.
 */
async function settled(call: BenchCaller, serviceId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await call('GET', `/v1/services/${serviceId}/instances`)).length > 1 && Date.now() < deadline)
    await sleep(50);
  await sleep(500);
}

/** `slugs` in turn, in round `i`: the first measured first in even rounds, last in odd ones. */
const inTurn = <T>(items: T[], i: number) => [...items.entries()].sort(([a], [b]) => (i % 2 ? b - a : a - b));

/**
 * Restarts of each service in turn, each timed from the POST to its answer (the new instance healthy and routed),
 * and the service settled before the next.
 */
async function measureRestarts(call: BenchCaller, services: Array<{ id: string }>): Promise<number[][]> {
  const times = services.map(() => [] as number[]);
  for (let i = 0; i < RESTARTS; i++)
    for (const [n, service] of inTurn(services, i)) {
      times[n]!.push(await timed(() => call('POST', `/v1/services/${service.id}/restart`)));
      await settled(call, service.id);
    }
  return times;
}

interface Load {
  reqPerSec: number;
  p99Ms: number;
}

/** A fixed-duration load (autocannon, as bench/router.ts): req/s and p99; any failed request ends the bench. */
async function load(name: string, url: string, headers: Record<string, string> = {}, seconds = LOAD_S): Promise<Load> {
  // reconnectRate: autocannon ignores `Connection: close`, and writes its next request on a connection nginx closes
  // after its 1,000th (keepalive_requests): about one in 70,000 requests failed so. A client that reconnects sooner
  // never meets that close.
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: seconds, reconnectRate: 500 });
  const failed = result.errors + result.timeouts + result.non2xx;
  if (failed > 0 || result['2xx'] === 0)
    throw new Error(
      `${name}: ${failed} failed of ${result.requests.total} requests ` +
        `(${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} not 2xx)`,
    );
  log(`${name}: ${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms`);
  return { reqPerSec: result.requests.average, p99Ms: result.latency.p99 };
}

/** Where a service's instance answers directly (its namespace's address and port), learnt through the router. */
async function directUrl(routerPort: number, slug: string): Promise<string | undefined> {
  // node:http, not fetch: fetch does not send a Host header of ours.
  const text = await new Promise<string>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: routerPort, path: '/', headers: { host: `${slug}.localhost` } }, (res) => {
        let body = '';
        res
          .setEncoding('utf8')
          .on('data', (chunk: string) => (body += chunk))
          .on('end', () =>
            res.statusCode === 200 ? resolve(body) : reject(new Error(`${slug}: ${res.statusCode} ${body}`)),
          );
      })
      .on('error', reject);
  });
  const { instance, env } = JSON.parse(text) as { instance: string; env: { PORT: string } };
  const address = namespaceAddress(instance);
  return address && `http://${address}:${env.PORT}/healthz`;
}

/**
 * `/healthz` of each service through the router, one round of each in turn; and, where the instances have namespaces
 * of their own, straight to each instance (which tells the router's path from the instance's own speed).
 */
async function measureLoad(routerPort: number, slugs: string[]) {
  const direct = await Promise.all(slugs.map((slug) => directUrl(routerPort, slug)));
  const haveDirect = direct.every(Boolean);
  const targets = slugs.map((slug, n) => ({
    router: () =>
      load(`${slug} via the router`, `http://127.0.0.1:${routerPort}/healthz`, {
        host: `${slug}.localhost:${routerPort}`,
      }),
    direct: () => load(`${slug} directly`, direct[n]!),
    warm: () =>
      load(`${slug} warm-up`, `http://127.0.0.1:${routerPort}/healthz`, { host: `${slug}.localhost:${routerPort}` }, 1),
  }));
  for (const target of targets) await target.warm();
  const viaRouter = slugs.map(() => [] as Load[]);
  const straight = slugs.map(() => [] as Load[]);
  for (let i = 0; i < LOAD_ROUNDS; i++)
    for (const [n, target] of inTurn(targets, i)) {
      viaRouter[n]!.push(await target.router());
      if (haveDirect) straight[n]!.push(await target.direct());
    }
  return { viaRouter, direct: haveDirect ? straight : undefined };
}

async function main() {
  const host = hostAddresses()[0];
  if (!hasContainerEngine || !host) {
    const reason = !hasContainerEngine
      ? 'no container engine on this machine (needs /usr/bin/podman, runc, /usr/bin/docker-registry and /bin/busybox)'
      : 'no non-loopback IPv4 address for the local registry';
    log(`bench/containers.ts skipped: ${reason}`);
    console.log(JSON.stringify({ bench: 'containers', smoke: SMOKE, skipped: reason }));
    return;
  }

  let registry: TestRegistry | undefined;
  let slipway: RunningSlipway | undefined;
  let call: BenchCaller | undefined;
  const services: string[] = [];
  try {
    registry = await startRegistry(host);
    const base = registry.pushBase('base/node:20');
    log(`base image ${base}`);
    const routerPort = await freePort();
    slipway = await startSlipway({
      SLIPWAY_ROUTER_PORT: String(routerPort),
      SLIPWAY_EGRESS_ALLOW: `${host}/32`,
      SLIPWAY_CONTAINER_INSECURE_REGISTRIES: registry.address,
    });
    ({ call } = await signUp(slipway.url));

    const builds = await measureBuilds(call, base, services);
    const docker = builds.docker;
    const native = (await liveFixtureService(call, 'bench-native', 10)).service;
    services.push(native.id);
    await settled(call, docker.id);

    log('restarts');
    const [dockerRestarts, nativeRestarts] = (await measureRestarts(call, [docker, native])) as [number[], number[]];
    log(`restart ms: container ${dockerRestarts.join(', ')}; native ${nativeRestarts.join(', ')}`);
    const loads = await measureLoad(routerPort, [docker.slug, native.slug]);
    const [dockerLoad, nativeLoad] = loads.viaRouter as [Load[], Load[]];

    const med = (values: number[]) => Math.round(median(values));
    const summary = (rounds: Load[]) => ({
      reqPerSec: med(rounds.map((l) => l.reqPerSec)),
      p99Ms: median(rounds.map((l) => l.p99Ms)),
      eachRound: rounds.map((l) => Math.round(l.reqPerSec)),
    });
    const ratio = (a: number, b: number) => Number((a / b).toFixed(3));
    const results = {
      builds: {
        first: builds.first.length,
        rebuilds: builds.cached.length,
        firstTriggerToLiveMs: med(builds.first.map((b) => b.triggerToLiveMs)),
        cachedTriggerToLiveMs: med(builds.cached.map((b) => b.triggerToLiveMs)),
        firstBuildStepMs: med(builds.first.map((b) => b.buildMs)),
        cachedBuildStepMs: med(builds.cached.map((b) => b.buildMs)),
      },
      restartMs: { container: med(dockerRestarts), native: med(nativeRestarts), restarts: RESTARTS },
      router: { container: summary(dockerLoad), native: summary(nativeLoad), rounds: LOAD_ROUNDS, seconds: LOAD_S },
      direct: loads.direct && { container: summary(loads.direct[0]!), native: summary(loads.direct[1]!) },
    };
    const ratios = {
      cachedOverFirst: ratio(results.builds.cachedTriggerToLiveMs, results.builds.firstTriggerToLiveMs),
      cachedOverFirstBuildStep: ratio(results.builds.cachedBuildStepMs, results.builds.firstBuildStepMs),
      restartContainerOverNative: ratio(results.restartMs.container, results.restartMs.native),
      routerContainerOverNative: ratio(results.router.container.reqPerSec, results.router.native.reqPerSec),
      directContainerOverNative:
        results.direct && ratio(results.direct.container.reqPerSec, results.direct.native.reqPerSec),
    };

    for (const id of [...services]) {
      await call('DELETE', `/v1/services/${id}`);
      services.splice(services.indexOf(id), 1);
    }

    log(
      table(
        ['measure', 'value', 'target'],
        [
          [`first build, trigger->live median (ms, ${results.builds.first})`, results.builds.firstTriggerToLiveMs, ''],
          [
            `cached rebuild, trigger->live median (ms, ${results.builds.rebuilds})`,
            results.builds.cachedTriggerToLiveMs,
            '',
          ],
          ['cached / first (trigger->live)', ratios.cachedOverFirst, '<= 0.3'],
          ['first build, build step median (ms)', results.builds.firstBuildStepMs, ''],
          ['cached rebuild, build step median (ms)', results.builds.cachedBuildStepMs, ''],
          ['cached / first (build step)', ratios.cachedOverFirstBuildStep, ''],
          [`restart median, container (ms, ${RESTARTS})`, results.restartMs.container, ''],
          [`restart median, native (ms, ${RESTARTS})`, results.restartMs.native, ''],
          ['restart container / native', ratios.restartContainerOverNative, '<= 2'],
          [
            'router req/s to the container (p99 ms)',
            `${results.router.container.reqPerSec} (${results.router.container.p99Ms})`,
            '',
          ],
          [
            'router req/s to the native instance (p99 ms)',
            `${results.router.native.reqPerSec} (${results.router.native.p99Ms})`,
            '',
          ],
          ['router req/s container / native', ratios.routerContainerOverNative, '>= 0.9'],
          ...(results.direct
            ? [
                [
                  'direct req/s to the container (p99 ms)',
                  `${results.direct.container.reqPerSec} (${results.direct.container.p99Ms})`,
                  '',
                ],
                [
                  'direct req/s to the native instance (p99 ms)',
                  `${results.direct.native.reqPerSec} (${results.direct.native.p99Ms})`,
                  '',
                ],
                ['direct req/s container / native', ratios.directContainerOverNative!, ''],
              ]
            : [['direct req/s', 'not measured (the instances share the host network)', '']]),
        ],
      ),
    );
    console.log(JSON.stringify({ bench: 'containers', smoke: SMOKE, ...results, ratios }));
  } finally {
    if (call) for (const id of services) await call('DELETE', `/v1/services/${id}`).catch(() => undefined);
    await slipway?.stop();
    await registry?.close();
  }
}

await main();
