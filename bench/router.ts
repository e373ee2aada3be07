/**
 * The router's data plane against the field's standard, in front of the same live instance, interleaved in one run:
 * the instance directly, Slipway's router (HTTP and HTTPS), a bare nginx (one worker, keep-alive upstream; HTTP and
 * HTTPS) and a minimal `node:http` keep-alive proxy (what a forwarder written in Node reaches). Then the time from
 * adding a custom domain to its first HTTPS 200 with a certificate from a real ACME server (pebble).
 * Targets (issue 13): router ≥ 0.8 of nginx's req/s over HTTP and HTTPS, p99 ≤ 1.5× nginx's; domain → HTTPS ≤ 5 s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { generate } from 'selfsigned';
import { findProgram } from '../src/runtime/local/capabilities.js';
import { hasPebble, startPebble } from '../test/helpers/acme.js';
import { proveOwnership, startTestDns } from '../test/helpers/dns.js';
import { fixtureArchive, freePort, log, median, signUp, sleep, startSlipway, table, type BenchCaller } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const ROUNDS = SMOKE ? 1 : 3;
const DURATION_S = SMOKE ? 1 : 4;
const CONNECTIONS = 50;

interface Target {
  name: string;
  url: string;
  host?: string;
  servername?: string;
}
interface Sample {
  reqPerSec: number;
  p99Ms: number;
}

/** Waits for a deploy to go live; one that fails ends the bench. */
async function live(call: BenchCaller, serviceId: string, deployId: string): Promise<void> {
  for (;;) {
    const d = await call('GET', `/v1/services/${serviceId}/deploys/${deployId}`);
    if (d.status === 'live') return;
    if (/failed|canceled/.test(d.status)) throw new Error(`deploy ended ${d.status}: ${d.failureReason}`);
    await sleep(50);
  }
}

async function load(target: Target, duration: number): Promise<Sample> {
  const result = await autocannon({
    url: target.url,
    connections: CONNECTIONS,
    duration,
    headers: target.host ? { host: target.host } : {},
    ...(target.servername ? { servername: target.servername } : {}),
  });
  if (result.non2xx > 0 || result['2xx'] === 0)
    throw new Error(`${target.name}: ${result.non2xx} non-2xx, ${result.errors} errors of ${result.requests.total}`);
  return { reqPerSec: result.requests.average, p99Ms: result.latency.p99 };
}

/** A bare nginx: one worker, a keep-alive upstream to the instance, HTTP and HTTPS, no access log. */
async function startNginx(upstreamPort: number) {
  const nginx = findProgram('nginx');
  if (!nginx) return undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-nginx-'));
  const cert = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
  });
  writeFileSync(path.join(dir, 'cert.pem'), cert.cert);
  writeFileSync(path.join(dir, 'key.pem'), cert.private);
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `daemon off; worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream app { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${httpPort};
    listen 127.0.0.1:${httpsPort} ssl;
    ssl_certificate ${dir}/cert.pem; ssl_certificate_key ${dir}/key.pem;
    location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $host; }
  }
}
`,
  );
  const child: ChildProcess = spawn(nginx, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: 'ignore' });
  await sleep(500);
  return {
    httpPort,
    httpsPort,
    stop() {
      child.kill('SIGQUIT');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The smallest keep-alive forwarder `node:http` allows: what a router written in Node can hope to reach. */
const NODE_PROXY = `
const http = require('node:http');
const [upstreamPort, port] = process.argv.slice(1).map(Number);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
http.createServer((req, res) => {
  const upstream = http.request(
    { host: '127.0.0.1', port: upstreamPort, path: req.url, method: req.method, headers: req.headers, agent },
    (answer) => { res.writeHead(answer.statusCode ?? 502, answer.headers); answer.pipe(res); },
  );
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
}).listen(port, '127.0.0.1', () => process.send?.('listening'));
process.on('disconnect', () => process.exit(0)); // the bench ended, or died: no proxy left behind
`;

/** The minimal proxy in a process of its own, as the router runs (inside the load generator it would share its CPU). */
async function startNodeProxy(upstreamPort: number) {
  const port = await freePort();
  const child = spawn(process.execPath, ['-e', NODE_PROXY, String(upstreamPort), String(port)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the node:http proxy exited (${code})`)));
  });
  return { port, stop: () => child.kill() };
}

/**
 * Both of Slipway's data planes in one Slipway each, with the baselines measured again beside each (a ratio is taken
 * within one run): the Node router alone, and nginx fed from the route table (SLIPWAY_ROUTER=nginx).
 */
async function throughput(router: 'node' | 'nginx', nodeRouterProcess: 'own' | 'api' = 'own', nodeWorkers?: number) {
  const [routerPort, httpsPort] = [await freePort(), await freePort()];
  const slipway = await startSlipway({
    SLIPWAY_ROUTER_PORT: String(routerPort),
    SLIPWAY_ROUTER_HTTPS_PORT: String(httpsPort),
    SLIPWAY_NETWORK: 'shared', // the instance at 127.0.0.1:<port>, for the direct path
    SLIPWAY_ROUTER: router,
    SLIPWAY_ROUTER_PROCESS: nodeRouterProcess,
    ...(nodeWorkers ? { SLIPWAY_ROUTER_NODE_WORKERS: String(nodeWorkers) } : {}),
  });
  const stops: Array<() => void> = [];
  try {
    const { call } = await signUp(slipway.url);
    const { service } = await call('POST', '/v1/services', {
      type: 'web_service',
      name: 'bench-router',
      serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
    });
    const up = await call(
      'POST',
      `/v1/services/${service.id}/source/upload`,
      undefined,
      await fixtureArchive('node-web'),
    );
    await live(call, service.id, up.deployId);
    const host = `${service.slug}.localhost`;
    const info = await new Promise<{ env: { PORT: string } }>((resolve, reject) =>
      http
        .get({ host: '127.0.0.1', port: routerPort, path: '/', headers: { host } }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve(JSON.parse(body)));
        })
        .on('error', reject),
    );
    const appPort = Number(info.env.PORT);
    const nginx = await startNginx(appPort);
    if (nginx) stops.push(() => nginx.stop());
    else log('nginx is not installed (apt-get install nginx-light): its rows are left out');
    const nodeProxy = await startNodeProxy(appPort);
    stops.push(() => nodeProxy.stop());

    const targets: Target[] = [
      { name: 'direct', url: `http://127.0.0.1:${appPort}/healthz` },
      { name: 'router http', url: `http://127.0.0.1:${routerPort}/healthz`, host },
      { name: 'router https', url: `https://127.0.0.1:${httpsPort}/healthz`, host, servername: host },
      ...(nginx
        ? [
            { name: 'nginx http', url: `http://127.0.0.1:${nginx.httpPort}/healthz` },
            { name: 'nginx https', url: `https://127.0.0.1:${nginx.httpsPort}/healthz`, servername: 'localhost' },
          ]
        : []),
      { name: 'node:http proxy', url: `http://127.0.0.1:${nodeProxy.port}/healthz` },
    ];
    for (const t of targets) await load(t, 1); // warm-up: connections, JIT
    const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < ROUNDS; round++)
      for (const t of targets) samples.get(t.name)!.push(await load(t, DURATION_S));
    return new Map(
      [...samples].map(([name, s]) => [
        name,
        { reqPerSec: median(s.map((x) => x.reqPerSec)), p99Ms: median(s.map((x) => x.p99Ms)) },
      ]),
    );
  } finally {
    for (const stop of stops) stop();
    await slipway.stop();
  }
}

/** Adding a domain (DNS already pointing here) → the first HTTPS 200 with a certificate from pebble. */
async function domainToHttps(): Promise<number | undefined> {
  if (!hasPebble()) return undefined;
  const dns = await startTestDns();
  const [routerPort, httpsPort] = [await freePort(), await freePort()];
  const acme = await startPebble({ dnsServer: dns.server, httpPort: routerPort, validitySeconds: 3600 });
  const slipway = await startSlipway({
    SLIPWAY_ROUTER_PORT: String(routerPort),
    SLIPWAY_ROUTER_HTTPS_PORT: String(httpsPort),
    SLIPWAY_DNS_SERVERS: dns.server,
    SLIPWAY_ROUTER_PUBLIC_IPS: '127.0.0.1',
    SLIPWAY_ACME_DIRECTORY_URL: acme.directoryUrl,
    SLIPWAY_ACME_CA_BUNDLE: acme.caBundleFile,
  });
  try {
    const root = await acme.issuingRoot();
    const { call } = await signUp(slipway.url);
    const { service } = await call('POST', '/v1/services', {
      type: 'static_site',
      name: 'bench-https',
      serviceDetails: { publishPath: 'public' },
    });
    const up = await call(
      'POST',
      `/v1/services/${service.id}/source/upload`,
      undefined,
      await fixtureArchive('static-site'),
    );
    await live(call, service.id, up.deployId);
    const name = `bench-${Date.now().toString(36)}.com`;
    await dns.addA(name, ['127.0.0.1']);
    const started = performance.now();
    const [domain] = await call('POST', `/v1/services/${service.id}/custom-domains`, { name });
    await proveOwnership(dns, domain); // the TXT record the body names, as a user would create it
    await call('POST', `/v1/services/${service.id}/custom-domains/${name}/verify`);
    const ok = () =>
      new Promise<boolean>((resolve) =>
        https
          .get(
            {
              host: '127.0.0.1',
              port: httpsPort,
              path: '/',
              servername: name,
              headers: { host: name },
              ca: root,
              agent: false,
            },
            (res) => {
              res.resume();
              resolve(res.statusCode === 200);
            },
          )
          .on('error', () => resolve(false)),
      );
    while (!(await ok())) {
      if (performance.now() - started > 30_000) throw new Error('no HTTPS 200 within 30 s');
      await sleep(20);
    }
    return performance.now() - started;
  } finally {
    await slipway.stop();
    await acme.close();
    await dns.close();
  }
}

// BENCH_PARTS=node,domain runs only those parts (node, node1, api, nginx, domain), e.g. to compare two builds quickly.
const parts = process.env.BENCH_PARTS?.split(',');
const part = (name: string) => !parts || parts.includes(name);
const nodeRun = await throughput('node');
// The Node router inside the API process (SLIPWAY_ROUTER_PROCESS=api, as before it had its own): smoke runs skip it.
const inApiRun = SMOKE || !part('api') ? undefined : await throughput('node', 'api');
// The Node router with one worker process (its default takes the machine's cores, up to 4): smoke runs skip it.
const oneWorkerRun = SMOKE || !part('node1') ? undefined : await throughput('node', 'own', 1);
const nginxRun = findProgram('nginx') && part('nginx') ? await throughput('nginx') : undefined;
const httpsMs = part('domain') ? await domainToHttps() : undefined;
// The Node router's run, its rows named as before, and the other runs' router rows beside them.
const results = new Map(nodeRun);
for (const [name, s] of nginxRun ?? [])
  if (name.startsWith('router')) results.set(name.replace('router', 'slipway nginx'), s);
for (const [name, s] of inApiRun ?? [])
  if (name.startsWith('router')) results.set(name.replace('router', 'router in api'), s);
for (const [name, s] of oneWorkerRun ?? [])
  if (name.startsWith('router') || name === 'node:http proxy') results.set(`${name}, 1-worker run`, s);
const get = (name: string) => results.get(name);
const inNginxRun = (name: string) => nginxRun?.get(name);
const ratio = (a?: Sample, b?: Sample) => (a && b ? +(a.reqPerSec / b.reqPerSec).toFixed(2) : undefined);
const p99Ratio = (a?: Sample, b?: Sample) => (a && b ? +(a.p99Ms / Math.max(b.p99Ms, 1)).toFixed(2) : undefined);
log(
  table(
    ['path', 'req/s', 'p99 ms'],
    [...results].map(([name, s]) => [name, Math.round(s.reqPerSec), s.p99Ms]),
  ),
);
const summary = {
  bench: 'router',
  smoke: SMOKE,
  connections: CONNECTIONS,
  ...Object.fromEntries([...results].map(([name, s]) => [name.replace(/[^a-z]+/g, '_'), s])),
  routerVsNginxHttp: ratio(get('router http'), get('nginx http')),
  routerVsNginxHttps: ratio(get('router https'), get('nginx https')),
  routerP99VsNginxHttp: p99Ratio(get('router http'), get('nginx http')),
  routerVsNodeProxy: ratio(get('router http'), get('node:http proxy')),
  routerOneWorkerVsNodeProxy: ratio(oneWorkerRun?.get('router http'), oneWorkerRun?.get('node:http proxy')),
  routerInApiVsNginxHttp: ratio(inApiRun?.get('router http'), inApiRun?.get('nginx http')),
  routerInApiVsNginxHttps: ratio(inApiRun?.get('router https'), inApiRun?.get('nginx https')),
  // SLIPWAY_ROUTER=nginx against the bare nginx of its own run.
  nginxPlaneVsNginxHttp: ratio(inNginxRun('router http'), inNginxRun('nginx http')),
  nginxPlaneVsNginxHttps: ratio(inNginxRun('router https'), inNginxRun('nginx https')),
  nginxPlaneP99VsNginxHttp: p99Ratio(inNginxRun('router http'), inNginxRun('nginx http')),
  domainToHttpsMs: httpsMs === undefined ? undefined : Math.round(httpsMs),
};
log(
  `SLIPWAY_ROUTER=nginx / bare nginx req/s: HTTP ${summary.nginxPlaneVsNginxHttp}, HTTPS ${summary.nginxPlaneVsNginxHttps} ` +
    `(target ≥ 0.8); p99 ${summary.nginxPlaneP99VsNginxHttp}× nginx's (target ≤ 1.5)`,
);
log(
  `Node router/nginx req/s: HTTP ${summary.routerVsNginxHttp}, HTTPS ${summary.routerVsNginxHttps} (target ≥ 0.8); ` +
    `p99 ${summary.routerP99VsNginxHttp}× nginx's (target ≤ 1.5); router/node:http proxy ${summary.routerVsNodeProxy} ` +
    `(${Math.min(4, availableParallelism())} worker processes; with one ${summary.routerOneWorkerVsNodeProxy}); ` +
    `inside the API process: HTTP ${summary.routerInApiVsNginxHttp}, HTTPS ${summary.routerInApiVsNginxHttps}; ` +
    `domain → first HTTPS 200: ${summary.domainToHttpsMs} ms (target ≤ 5000)`,
);
console.log(JSON.stringify(summary));
