/**
 * bench/blueprints.ts's sync measures: 10 services made by one blueprint sync against the same 10 made through the API
 * one by one, each arm from the first request to every service live; then no-op re-syncs.
 */
import { fixtureArchive, log, median, signUp, sleep, startSlipway } from './lib.js';

const SERVICES = 10;
const details = {
  runtime: 'node',
  buildCommand: 'true',
  healthCheckPath: '/healthz',
  envSpecificDetails: { startCommand: 'node server.js' },
};
const yaml = Array.from(
  { length: SERVICES },
  (_, i) => `  - type: web
    name: web-${i}
    runtime: node
    buildCommand: "true"
    startCommand: node server.js
    healthCheckPath: /healthz
`,
).join('');

type Caller = Awaited<ReturnType<typeof signUp>>;

async function allLive(me: Caller) {
  for (;;) {
    const services = (await me.call('GET', '/v1/services?limit=100')) as any[];
    let live = 0;
    for (const { service } of services) {
      const deploys = (await me.call('GET', `/v1/services/${service.id}/deploys?limit=1`)) as any[];
      const status = deploys[0]?.deploy.status;
      if (status === 'live') live++;
      else if (status && /failed|canceled/.test(status)) throw new Error(`${service.name}: ${status}`);
    }
    if (live === SERVICES) return;
    await sleep(20);
  }
}

async function viaApi(url: string, archive: Buffer): Promise<number> {
  const me = await signUp(url);
  const start = performance.now();
  for (let i = 0; i < SERVICES; i++) {
    const { service } = await me.call('POST', '/v1/services', {
      type: 'web_service',
      name: `web-${i}`,
      serviceDetails: details,
    });
    await me.call('POST', `/v1/services/${service.id}/source/upload`, undefined, archive);
  }
  await allLive(me);
  return performance.now() - start;
}

async function syncEnd(me: Caller, blueprintId: string, syncId: string) {
  for (;;) {
    const syncs = (await me.call('GET', `/v1/blueprints/${blueprintId}/syncs?limit=5`)) as any[];
    const sync = syncs.find((s) => s.sync.id === syncId)?.sync;
    if (sync && sync.state !== 'running') {
      if (sync.state !== 'success') throw new Error(`sync failed: ${sync.error}`);
      return;
    }
    await sleep(5);
  }
}

async function viaBlueprint(url: string, archive: Buffer) {
  const me = await signUp(url);
  const form = new FormData();
  form.append('name', 'bench');
  form.append('file', new Blob([new Uint8Array(archive)]), 'app.tgz');
  const start = performance.now();
  const res = await fetch(`${url}/v1/blueprints`, { method: 'POST', headers: me.headers, body: form });
  if (res.status !== 201) throw new Error(`create blueprint: ${res.status} ${await res.text()}`);
  const { blueprint, sync } = (await res.json()) as any;
  await syncEnd(me, blueprint.id, sync.id);
  const syncedMs = performance.now() - start;
  await allLive(me);
  const ms = performance.now() - start;
  const noop: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const again = await me.call('POST', `/v1/blueprints/${blueprint.id}/sync`, {});
    await syncEnd(me, blueprint.id, again.id);
    noop.push(performance.now() - t0);
  }
  return { ms, syncedMs, noop };
}

export async function measureSync(rounds: number) {
  const slipway = await startSlipway();
  try {
    const archive = await fixtureArchive('blueprint-app', { 'render.yaml': `services:\n${yaml}` });
    const api: number[] = [];
    const blueprint: number[] = [];
    const noop: number[] = [];
    const synced: number[] = [];
    for (let round = 0; round < rounds; round++) {
      log(`sync round ${round + 1}/${rounds}: ${SERVICES} services through the API, then by a blueprint`);
      api.push(await viaApi(slipway.url, archive));
      const b = await viaBlueprint(slipway.url, archive);
      blueprint.push(b.ms);
      synced.push(b.syncedMs);
      noop.push(...b.noop);
    }
    const r = (n: number) => Math.round(n);
    return {
      services: SERVICES,
      apiMs: r(median(api)),
      blueprintMs: r(median(blueprint)),
      syncEndedMs: r(median(synced)),
      ratio: Number((median(blueprint) / median(api)).toFixed(2)),
      noopMs: { p50: r(median(noop)), max: r(Math.max(...noop)) },
      noopMet: Math.max(...noop) <= 300,
    };
  } finally {
    await slipway.stop();
  }
}
