/**
 * The git cases of issue 29 for bench/abuse.ts: one workspace's autoDeploy services pointing at git servers that
 * never answer, and another workspace's new commit meanwhile (push → live). Both git servers listen on one of the
 * host's own addresses, which Slipway's builds may reach only when allowed: `gitEnv(host)` is what Slipway must run
 * with.
 */
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, repoRoot, signUp, sleep, waitLive } from './lib.js';

/** One of this machine's own IPv4 addresses (not loopback, not a Slipway bridge): where the git servers listen. */
export function hostAddress(): string {
  const found = Object.entries(networkInterfaces())
    .filter(([name]) => !name.startsWith('slw'))
    .flatMap(([, addrs]) => addrs ?? [])
    .find((a) => a.family === 'IPv4' && !a.internal);
  if (!found) throw new Error('this machine has no IPv4 address besides loopback');
  return found.address;
}

/** Slipway's settings for these cases: builds may reach `host`, and repos are polled every second. */
export const gitEnv = (host: string) => ({ SLIPWAY_EGRESS_ALLOW: `${host}/32`, SLIPWAY_GIT_POLL_INTERVAL_MS: '1000' });

/** The attacker: `repos` autoDeploy services whose repo is a TCP server that accepts and never says a word. */
export async function startDeadGitRepos(url: string, host: string, opts: { repos?: number } = {}) {
  const { repos = 12 } = opts;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as net.AddressInfo).port;
  const { call } = await signUp(url);
  const ids: string[] = [];
  for (let i = 0; i < repos; i++) {
    const { service } = await call('POST', '/v1/services', {
      type: 'web_service',
      name: `dead-git-${i}`,
      repo: `git://${host}:${port}/dead-${i}`,
      branch: 'main',
      autoDeploy: 'yes',
      serviceDetails: { runtime: 'node' },
    });
    ids.push(service.id);
  }
  return {
    /** Deletes the services too: their polls of a closed port would go on into the next case's measurement. */
    stop: async () => {
      for (const s of sockets) s.destroy();
      server.close();
      for (const id of ids) await call('DELETE', `/v1/services/${id}`);
    },
  };
}

/**
 * The victim: a workspace with an autoDeploy service from a live git server (`git daemon`); `measure()` commits a
 * change and times it from the commit to the deploy of that commit going live.
 */
export async function gitVictim(url: string, host: string) {
  const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-bench-git-'));
  chmodSync(scratch, 0o755);
  const repo = path.join(scratch, 'app');
  cpSync(path.join(repoRoot, 'test/fixtures/apps/node-web'), repo, { recursive: true });
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', repo, '-c', 'user.name=b', '-c', 'user.email=b@example.com', ...args], {
      encoding: 'utf8',
    }).trim();
  git('init', '--quiet', '--initial-branch=main');
  git('add', '.');
  git('commit', '--quiet', '-m', 'first');
  const port = await freePort();
  const daemon = spawn(
    'git',
    ['daemon', '--export-all', `--base-path=${scratch}`, `--listen=${host}`, `--port=${port}`, '--reuseaddr', scratch],
    { stdio: 'ignore' },
  );
  for (let i = 0; ; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, host);
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) break;
    if (i > 100) throw new Error('git daemon did not start');
    await sleep(50);
  }
  const { call } = await signUp(url);
  const { service, deployId } = await call('POST', '/v1/services', {
    type: 'web_service',
    name: 'git-victim',
    repo: `git://${host}:${port}/app`,
    branch: 'main',
    autoDeploy: 'yes',
    serviceDetails: { runtime: 'node' },
  });
  const live = (id: string) => waitLive(call, service.id, id, 50);
  await live(deployId);
  let n = 0;
  return {
    async measure(): Promise<number> {
      writeFileSync(path.join(repo, 'VERSION'), `v${++n}`);
      git('add', '.');
      git('commit', '--quiet', '-m', `v${n}`);
      const commit = git('rev-parse', 'HEAD');
      const started = performance.now();
      for (;;) {
        const list = (await call('GET', `/v1/services/${service.id}/deploys?limit=5`)) as Array<{
          deploy: { id: string; commit?: { id?: string } };
        }>;
        const found = list.find((d) => d.deploy.commit?.id === commit);
        if (found) {
          await live(found.deploy.id);
          return performance.now() - started;
        }
        await sleep(50);
      }
    },
    stop: () => {
      daemon.kill();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}
