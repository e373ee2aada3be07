/**
 * git runs for tenants in the builds' sandbox (docs/deploys.md, "Git"): never on the host's network, never as root, onto a
 * disk of capped size, stopped when its transport hangs, and its failures summarized without the remote's words.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURES, finished } from './helpers/apps.js';
import { signUp, type Client, type TestUser } from './helpers/client.js';
import { sleep, waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';
import { hostAddresses } from './helpers/network.js';
import { spawn } from 'node:child_process';

const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-git-sandbox-'));
chmodSync(scratch, 0o755); // the builds' user reads the local repos below
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A git repository of the node-web fixture, with `extra` files committed too. */
function makeRepo(name: string, extra: (dir: string) => void = () => undefined): string {
  const dir = path.join(scratch, name);
  cpSync(path.join(FIXTURES, 'node-web'), dir, { recursive: true });
  extra(dir);
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args]);
  git('init', '--quiet', '--initial-branch=main');
  git('add', '.');
  git('commit', '--quiet', '-m', 'first');
  return dir;
}

async function gitService(api: Client, owner: TestUser, repo: string, autoDeploy: 'yes' | 'no' = 'no') {
  const created = await api.post(
    '/v1/services',
    {
      type: 'web_service',
      name: `git-${Math.random().toString(36).slice(2, 8)}`,
      repo,
      branch: 'main',
      autoDeploy,
      serviceDetails: { runtime: 'node' },
    },
    owner,
  );
  expect(created.status, created.text).toBe(201);
  const { service } = created.body as { service: { id: string } };
  if (autoDeploy === 'yes') return { service, deployId: created.body.deployId as string };
  const deploy = await api.post(`/v1/services/${service.id}/deploys`, {}, owner);
  expect(deploy.status, deploy.text).toBe(201);
  return { service, deployId: deploy.body.id as string };
}

/** A loopback HTTP server that counts what reaches it and answers `status` with a plain-text body. */
async function loopbackServer(status: number, body: string) {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { seen, port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

/** A TCP server that accepts and never says a word (git:// to a port of something else, say Redis). */
async function silentServer() {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => void sockets.add(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** The host's own address (not loopback): where a "private" git server listens for the opt-in below. */
const hostAddress = hostAddresses()[0]!;

describe('git in the sandbox (namespaces where the machine has them)', () => {
  const t = useServer({
    SLIPWAY_GIT_ALLOW_LOCAL: '1',
    SLIPWAY_GIT_POLL_INTERVAL_MS: '300',
    SLIPWAY_BUILD_DISK_MB: '64',
    SLIPWAY_EGRESS_ALLOW: `${hostAddress}/32`,
  });

  it('reaches a private git server the operator allowed (SLIPWAY_EGRESS_ALLOW)', async () => {
    makeRepo('served');
    const port = 20000 + Math.floor(Math.random() * 20000);
    const daemon = spawn('git', [
      'daemon',
      '--export-all',
      `--base-path=${scratch}`,
      `--listen=${hostAddress}`,
      `--port=${port}`,
      '--reuseaddr',
      scratch,
    ]);
    try {
      await waitFor('git daemon', () => {
        const s = net.connect(port, hostAddress);
        return new Promise<boolean | undefined>((resolve) => {
          s.once('connect', () => (s.destroy(), resolve(true)));
          s.once('error', () => resolve(undefined));
        });
      });
      const owner = await signUp(t.api);
      const { service, deployId } = await gitService(t.api, owner, `git://${hostAddress}:${port}/served`);
      expect((await finished(t.api, owner, service.id, deployId)).status).toBe('live');
    } finally {
      daemon.kill();
    }
  }, 120_000);

  it("never reaches the host's loopback: neither a deploy's clone nor autoDeploy's polls", async () => {
    const server = await loopbackServer(200, 'hello');
    try {
      const owner = await signUp(t.api);
      const repo = `http://127.0.0.1:${server.port}/x.git`;
      const { service, deployId } = await gitService(t.api, owner, repo, 'yes');
      const failed = await finished(t.api, owner, service.id, deployId);
      expect(failed.status).toBe('build_failed');
      expect(failed.failureReason).toMatch(/^git clone of http:\/\/127\.0\.0\.1:\d+\/x\.git failed: could not connect/);
      await sleep(2000); // several poll intervals
      expect(server.seen).toEqual([]);
    } finally {
      server.close();
    }
  }, 120_000);

  it("runs as the unprivileged builds' user: a repository only root may read is not cloned", async () => {
    const repo = makeRepo('root-only');
    chmodSync(repo, 0o700);
    const owner = await signUp(t.api);
    const { service, deployId } = await gitService(t.api, owner, `file://${repo}`);
    const failed = await finished(t.api, owner, service.id, deployId);
    expect(failed.status).toBe('build_failed');
    expect(failed.failureReason).toMatch(/^git clone of file:\/\/.* failed: /);
    // The same repository, readable: deploys (the sandbox, not the repo, was the reason).
    chmodSync(repo, 0o755);
    const again = await t.api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    expect((await finished(t.api, owner, service.id, again.body.id)).status).toBe('live');
  }, 120_000);

  it("writes on the service's build disk: a repository larger than it fails, saying so", async () => {
    // 80 MiB that do not compress: more than the 64 MiB disk holds.
    const repo = makeRepo('too-big', (dir) =>
      execFileSync('sh', ['-c', `head -c ${80 * 1024 * 1024} /dev/urandom > big.bin`], { cwd: dir }),
    );
    const owner = await signUp(t.api);
    const { service, deployId } = await gitService(t.api, owner, `file://${repo}`);
    const failed = await finished(t.api, owner, service.id, deployId, 120_000);
    expect(failed.status).toBe('build_failed');
    expect(failed.failureReason).toMatch(/failed: the build disk is full: .* 64 MiB \(SLIPWAY_BUILD_DISK_MB\)/);
  }, 120_000);
});

describe('git on the shared network (the summaries and timeouts, with a server git can reach)', () => {
  const t = useServer({
    SLIPWAY_NETWORK: 'shared',
    SLIPWAY_GIT_TIMEOUT_SECONDS: '2',
    SLIPWAY_GIT_ALLOW_LOCAL: '1',
    SLIPWAY_GIT_POLL_INTERVAL_MS: '1000',
  });

  it("summarizes a failure in Slipway's words: the remote's body never reaches failureReason", async () => {
    const server = await loopbackServer(500, 'SECRET-BODY of another service\n');
    try {
      const owner = await signUp(t.api);
      const { service, deployId } = await gitService(t.api, owner, `http://127.0.0.1:${server.port}/x.git`);
      const failed = await finished(t.api, owner, service.id, deployId);
      expect(server.seen.length).toBeGreaterThan(0); // it did answer
      expect(failed.status).toBe('build_failed');
      expect(failed.failureReason).toMatch(
        /^git clone of http:\/\/127\.0\.0\.1:\d+\/x\.git failed: the server answered HTTP 500$/,
      );
      expect(JSON.stringify(failed)).not.toContain('SECRET');
    } finally {
      server.close();
    }
  }, 120_000);

  it('stops a git transport that hangs within the git timeout', async () => {
    const server = await silentServer();
    try {
      const owner = await signUp(t.api);
      const started = Date.now();
      const { service, deployId } = await gitService(t.api, owner, `git://127.0.0.1:${server.port}/x`);
      const failed = await finished(t.api, owner, service.id, deployId);
      expect(failed.status).toBe('build_failed');
      expect(failed.failureReason).toMatch(/failed: no data from the server for 2 s: stopped$/);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      server.close();
    }
  }, 120_000);

  it("polls fairly: another workspace's hanging repos do not delay a new commit's deploy", async () => {
    const hang = await silentServer();
    const repo = makeRepo('victim');
    try {
      const attacker = await signUp(t.api);
      for (let i = 0; i < 12; i++) await gitService(t.api, attacker, `git://127.0.0.1:${hang.port}/r${i}`, 'yes');
      const victim = await signUp(t.api);
      const { service, deployId } = await gitService(t.api, victim, `file://${repo}`, 'yes');
      expect((await finished(t.api, victim, service.id, deployId)).status).toBe('live');
      await sleep(1500); // the poller has seen the first commit, and the attacker's polls hang
      writeFileSync(path.join(repo, 'VERSION'), 'v2');
      execFileSync('git', ['-C', repo, 'add', 'VERSION']);
      execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-qm', 'v2']);
      const pushed = Date.now();
      const next = await waitFor(
        'the new commit to be deployed',
        async () => {
          const list = await t.api.get(`/v1/services/${service.id}/deploys`, victim);
          return list.body.find((d: { deploy: { trigger: string } }) => d.deploy.trigger === 'new_commit');
        },
        30_000,
        100,
      );
      // One poll interval (the default, 60 s, is far above this: the test's is 1 s) plus one git timeout at most.
      expect(Date.now() - pushed).toBeLessThan(8_000);
      expect(next.deploy.trigger).toBe('new_commit');
    } finally {
      hang.close();
    }
  }, 120_000);
});
