import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import type { Caller, Client } from './client.js';
import { REPO_ROOT, waitFor } from './process.js';
import { dataDirsByRouterPort } from './server.js';

export const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/apps');

/** Files added to a fixture app, or replacing its own, by path: text, or bytes (a wheel). */
export type ExtraFiles = Record<string, string | Uint8Array>;

/** A .tar.gz of a fixture app, with `extra` files added or replaced (e.g. a VERSION). */
export async function packFixture(name: string, extra: ExtraFiles = {}): Promise<Buffer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-fixture-'));
  try {
    cpSync(path.join(FIXTURES, name), dir, { recursive: true });
    for (const [file, content] of Object.entries(extra)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), content);
    }
    const out = `${dir}.tgz`;
    await tar.c({ gzip: true, cwd: dir, file: out, portable: true }, ['.']);
    const data = readFileSync(out);
    rmSync(out);
    return data;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function upload(
  api: Client,
  as: Caller,
  serviceId: string,
  archive: Uint8Array,
  contentType = 'application/gzip',
) {
  return api.call('POST', `/v1/services/${serviceId}/source/upload`, {
    ...as,
    raw: archive,
    headers: { 'content-type': contentType },
  });
}

const DONE = new Set(['live', 'deactivated', 'build_failed', 'pre_deploy_failed', 'update_failed', 'canceled']);

/** Polls a deploy until it ends (any final status); returns it. */
export async function finished(api: Client, as: Caller, serviceId: string, deployId: string, timeoutMs = 60_000) {
  return waitFor(
    `deploy ${deployId} to finish`,
    async () => {
      const res = await api.get(`/v1/services/${serviceId}/deploys/${deployId}`, as);
      return DONE.has(res.body?.status) ? res.body : undefined;
    },
    timeoutMs,
    50,
  );
}

/** Creates a service and deploys a fixture archive; returns the service and its live deploy. */
export async function deployFixture(
  api: Client,
  as: Caller,
  fixture: string,
  service: Record<string, unknown> = {},
  extra: ExtraFiles = {},
) {
  const created = await api.post(
    '/v1/services',
    {
      type: 'web_service',
      name: `${fixture}-${Math.random().toString(36).slice(2, 8)}`,
      serviceDetails: { runtime: 'node' },
      ...service,
    },
    as,
  );
  if (created.status !== 201) throw new Error(`create service: ${created.status} ${created.text}`);
  const svc = created.body.service;
  const up = await upload(api, as, svc.id, await packFixture(fixture, extra));
  if (up.status !== 201) throw new Error(`upload: ${up.status} ${up.text}`);
  const deploy = await finished(api, as, svc.id, up.body.deployId);
  return { service: svc, deploy, sourceId: up.body.id as string };
}

export interface RouterReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json(): any;
}

type RouterRequestOptions = {
  method?: string;
  /** false: a connection of its own (none kept alive that a reload of nginx could close under the next request). */
  agent?: http.Agent | false;
  timeoutMs?: number;
  headers?: Record<string, string>;
};
/** A request through Slipway's router for `<slug>.localhost`, the way a browser would send it. */
export const viaRouter = (routerPort: number, slug: string, urlPath = '/', opts: RouterRequestOptions = {}) =>
  viaRouterAs(routerPort, `${slug}.localhost`, urlPath, opts);

/** A request through Slipway's router for any host name (a custom domain), without following redirects. */
/** Asks a tenant's prober app (net-prober), through the router, to try something on the network: its JSON answer. */
export const probeVia = async (routerPort: number, slug: string, what: string, q: Record<string, string | number>) =>
  JSON.parse(
    (
      await viaRouter(
        routerPort,
        slug,
        `/${what}?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`,
      )
    ).text,
  );

export function viaRouterAs(
  routerPort: number,
  host: string,
  urlPath = '/',
  opts: RouterRequestOptions = {},
): Promise<RouterReply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: routerPort,
        path: urlPath,
        method: opts.method ?? 'GET',
        headers: { ...opts.headers, host: `${host}:${routerPort}` },
        agent: opts.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
        });
        res.on('error', reject);
      },
    );
    const started = Date.now();
    req.setTimeout(opts.timeoutMs ?? 10_000, () =>
      req.destroy(new Error(`router request ${urlPath} timed out${whyTimedOut(routerPort, req, started)}`)),
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * What a timed-out request's message adds, on one line (CI's summary shows one): the connection and its state in the
 * kernel, nginx's processes and last errors, the addresses its balancer has.
 */
function whyTimedOut(routerPort: number, req: http.ClientRequest, started: number): string {
  const dataDir = dataDirsByRouterPort.get(routerPort);
  const prefix = dataDir ? path.join(dataDir, 'router-nginx') : undefined;
  const tail = (file: string, lines: number) => {
    try {
      return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join(' | ');
    } catch {
      return '';
    }
  };
  const shell = (file: string, args: string[]) => {
    try {
      return execFileSync(file, args, { encoding: 'utf8', timeout: 2000 }).trim().replace(/\s+/g, ' ');
    } catch (err) {
      return (err as Error).message;
    }
  };
  const localPort = req.socket?.localPort;
  const master = prefix ? tail(path.join(prefix, 'nginx.pid'), 1) || '0' : '0';
  const facts = [
    `after ${Date.now() - started} ms on ${req.reusedSocket ? 'a kept-alive connection' : 'a new connection'}`,
    localPort
      ? `socket: ${shell('ss', ['-tnpO', 'state', 'all', `( sport = :${localPort} or dport = :${localPort} )`])}`
      : '',
    prefix ? `nginx: ${shell('ps', ['-o', 'pid,ppid,stat,etimes,args', '--pid', master, '--ppid', master])}` : '',
    prefix ? `error.log: ${tail(path.join(prefix, 'error.log'), 3)}` : '',
    prefix ? `upstreams: ${tail(path.join(prefix, 'upstreams.txt'), 5)}` : '',
    prefix ? `upstream sockets: ${upstreamSockets(tail(path.join(prefix, 'upstreams.txt'), 5), shell)}` : '',
  ];
  return ` ${facts.filter(Boolean).join('; ')}`;
}

/** nginx's connections to the addresses it balances over, as the kernel has them (an answer that never comes). */
function upstreamSockets(upstreams: string, shell: (file: string, args: string[]) => string): string {
  const addresses = [...upstreams.matchAll(/(\d+\.\d+\.\d+\.\d+):(\d+)/g)].map((m) => m[1]!);
  return [...new Set(addresses)]
    .map((a) => shell('ss', ['-tnpO', 'state', 'all', 'dst', a]).replace(/^State.*?Process ?/, ''))
    .join(' / ');
}

/**
 * Host pids of the processes running for a service, found by the SLIPWAY_SERVICE_ID in their
 * environment (apps see their own pid namespace in the sandbox, so their `process.pid` is no use here).
 */
export function processesOf(serviceId: string): number[] {
  const needle = `SLIPWAY_SERVICE_ID=${serviceId}\0`;
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(needle)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/**
 * Sends `requests` one after another, again and again, until `stop()`: counts the 200s and lists everything else
 * (an error as status 0). What a user's traffic looks like while something is killed or replaced.
 */
export function keepRequesting(requests: Array<() => Promise<{ status: number; text: string }>>) {
  const failures: string[] = [];
  let served = 0;
  let stopped = false;
  const running = (async () => {
    while (!stopped) {
      for (const request of requests) {
        const r = await request().catch((err: Error) => ({ status: 0, text: err.message }));
        if (r.status === 200) served++;
        else failures.push(`${r.status} ${r.text.slice(0, 80)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return {
    failures,
    served: () => served,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** Waits until a request to `urlPath` appears in the service's request log (the router's access log, tailed). */
export async function requestLogged(
  api: Client,
  as: Caller & { workspaceId: string },
  serviceId: string,
  urlPath: string,
) {
  const query = `/v1/logs?ownerId=${as.workspaceId}&resource=${serviceId}&type=request&path=${urlPath}`;
  await waitFor(
    `a request to ${urlPath} in the request log`,
    async () => (await api.get(query, as)).body.logs?.length > 0 || undefined,
    10_000,
  );
}
