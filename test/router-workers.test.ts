/**
 * The Node router's worker processes (src/router/daemon/workers.ts): every change reaches each worker, each worker's
 * requests reach the request log, and a worker that dies is replaced, serving the current table, while the router
 * process and the other worker go on.
 */
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { daemonFiles, overSocket, runningDaemon } from '../src/router/daemon/files.js';
import { deployFixture, finished, packFixture, requestLogged, upload, viaRouter } from './helpers/apps.js';
import { client, signUp } from './helpers/client.js';
import { bootServer } from './helpers/server.js';
import { sleep, waitFor } from './helpers/process.js';

/** The router's worker processes: children of `pid` running its entry point (tsx, from sources, has others). */
function workersOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid …: comm may hold spaces, so fields are counted after its closing parenthesis.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== pid) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('router/daemon/main.')) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children.sort((a, b) => a - b);
}

/** Every process of the router of `dir`, the primary and its workers, whoever their parent is now. */
function routerProcesses(dir: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => {
      try {
        const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
        return args.includes(dir) && args.some((arg) => arg.includes('router/daemon/main.'));
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('the Node router with two worker processes', () => {
  it('gives every change to each worker, and replaces a worker that dies with one serving the current table', async () => {
    const server = await bootServer({ SLIPWAY_ROUTER: 'node', SLIPWAY_ROUTER_NODE_WORKERS: '2' });
    try {
      const api = client(server.url);
      const owner = await signUp(api);
      const port = server.slipway.routerPort;
      const primary = runningDaemon(daemonFiles(server.dataDir))!;
      expect(workersOf(primary)).toHaveLength(2);
      expect((await api.get('/status')).body.router).toMatchObject({ kind: 'node', process: { workers: 2 } });

      // node:cluster hands each new connection to the next worker: a dozen fresh connections reach both.
      const fresh = new http.Agent({ keepAlive: false });
      const versions = async (slug: string, paths: string[]) => {
        const seen: string[] = [];
        for (const p of paths) {
          const r = await viaRouter(port, slug, p, { agent: fresh });
          seen.push(r.status === 200 ? (r.json().version as string) : `${r.status}`);
        }
        return seen;
      };
      const paths = (tag: string) => Array.from({ length: 12 }, (_, i) => `/${tag}-${i}`);

      const { service } = await deployFixture(api, owner, 'node-web', {}, { VERSION: 'v1' });
      const first = paths('first');
      expect(await versions(service.slug, first)).toEqual(first.map(() => 'v1'));
      for (const p of first) await requestLogged(api, owner, service.id, p); // both workers' access log lines

      const up = await upload(api, owner, service.id, await packFixture('node-web', { VERSION: 'v2' }));
      expect((await finished(api, owner, service.id, up.body.deployId)).status).toBe('live');
      const second = paths('second');
      expect(await versions(service.slug, second)).toEqual(second.map(() => 'v2'));

      const [victim, survivor] = workersOf(primary);
      process.kill(victim!, 'SIGKILL');
      await sleep(200);
      const meanwhile = paths('meanwhile');
      expect(await versions(service.slug, meanwhile)).toEqual(meanwhile.map(() => 'v2')); // the other worker
      const output = daemonFiles(server.dataDir).output;
      await waitFor(
        'a new worker',
        async () => readFileSync(output, 'utf8').includes('a new worker serves') || undefined,
        15_000,
      );
      expect(workersOf(primary)).toHaveLength(2);
      expect(workersOf(primary)).not.toContain(victim);
      expect(workersOf(primary)).toContain(survivor);
      expect(runningDaemon(daemonFiles(server.dataDir))).toBe(primary);
      const after = paths('after');
      expect(await versions(service.slug, after)).toEqual(after.map(() => 'v2')); // the new one: the current table

      // An update sent while a worker starts again is answered at once; the new worker starts from it.
      const files = daemonFiles(server.dataDir);
      const [killed] = workersOf(primary);
      process.kill(killed!, 'SIGKILL');
      await waitFor(
        'its replacement forked',
        async () => workersOf(primary).filter((pid) => pid !== killed).length === 2 || undefined,
        5000,
        5,
      );
      const began = Date.now();
      expect((await overSocket(files.control, 'PUT', '/state', readFileSync(files.state, 'utf8'))).status).toBe(200);
      expect(Date.now() - began).toBeLessThan(3000);

      // Stopped while a worker starts again: every process of the router ends (workers that have not ended their
      // connections 10 s after the stop are killed; a loaded machine can take that long).
      process.kill(workersOf(primary)[0]!, 'SIGKILL');
      await sleep(150);
      process.kill(primary, 'SIGTERM');
      await waitFor('the router to end', async () => routerProcesses(files.dir).length === 0 || undefined, 15_000);
    } finally {
      await server.close();
    }
  }, 120_000);
});
