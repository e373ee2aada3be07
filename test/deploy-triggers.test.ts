/**
 * Deploys that start without a user at the API: Render's deploy hooks (a secret URL per service) and, for git
 * services without push notifications, polling the branch for new commits.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, finished, viaRouter } from './helpers/apps.js';
import { addMember, client, signUp, type Client, type TestUser } from './helpers/client.js';
import { bootServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/process.js';
import { hostAddresses } from './helpers/network.js';
import { serveGitHttp } from './helpers/git-http.js';

const POLL_MS = 300;
/** Builds reach the host only where the operator allows: the held git server below listens on it. */
const hostAddress = hostAddresses()[0]!;
let server: TestServer;
let api: Client;
const logged: string[] = [];
const repoDir = mkdtempSync(path.join(tmpdir(), 'slipway-hook-'));
chmodSync(repoDir, 0o755); // git runs as the builds' user, which must read a local repo (docs/deploys.md, "Git")
const git = (...args: string[]) =>
  execFileSync('git', ['-C', repoDir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    encoding: 'utf8',
  }).trim();
/** A new commit on `main` that sets VERSION; returns its id. */
function commit(version: string) {
  writeFileSync(path.join(repoDir, 'VERSION'), version);
  git('commit', '--quiet', '-am', `version ${version}`);
  return git('rev-parse', 'HEAD');
}

beforeAll(async () => {
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => logged.push(chunk.toString()));
  server = await bootServer(
    {
      SLIPWAY_GIT_ALLOW_LOCAL: '1',
      SLIPWAY_GIT_POLL_INTERVAL_MS: String(POLL_MS),
      SLIPWAY_EGRESS_ALLOW: `${hostAddress}/32`,
    },
    undefined,
    { stream, level: 'info' },
  );
  api = client(server.url);
  cpSync(path.join(FIXTURES, 'node-web'), repoDir, { recursive: true });
  git('init', '--quiet', '--initial-branch=main');
  writeFileSync(path.join(repoDir, 'VERSION'), 'v1');
  git('add', '.');
  git('commit', '--quiet', '-m', 'version v1');
});
afterAll(async () => {
  await server?.close();
  rmSync(repoDir, { recursive: true, force: true });
});

async function gitService(owner: TestUser, name: string, autoDeploy: 'yes' | 'no') {
  const created = await api.post(
    '/v1/services',
    {
      type: 'web_service',
      name,
      repo: `file://${repoDir}`,
      branch: 'main',
      autoDeploy,
      serviceDetails: { runtime: 'node' },
    },
    owner,
  );
  expect(created.status).toBe(201);
  return created.body as { service: { id: string; slug: string }; deployId: string };
}
const deploysOf = async (owner: TestUser, id: string) =>
  (await api.get(`/v1/services/${id}/deploys?limit=100`, owner)).body.map((d: { deploy: unknown }) => d.deploy);
const version = async (slug: string) => (await viaRouter(server.slipway.routerPort, slug)).json().version;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('deploy hooks', () => {
  it('deploys the head or a given commit with the key; wrong, rotated and deleted keys get 404; the key is never shown again or logged', async () => {
    const owner = await signUp(api);
    const viewer = await addMember(api, owner, 'viewer');
    const stranger = await signUp(api);
    // autoDeploy off: the first deploy is created by hand and the poller leaves the service alone.
    const { service } = await gitService(owner, 'hooked', 'no');
    const first = await api.post(`/v1/services/${service.id}/deploys`, {}, owner);
    expect((await finished(api, owner, service.id, first.body.id)).status).toBe('live');

    const hookPath = `/v1/services/${service.id}/deploy-hook`;
    expect((await api.get(hookPath, owner)).body).toMatchObject({ enabled: false, keyHint: null });
    expect((await api.post(`/deploy/${service.id}?key=dhk_guess`)).status).toBe(404);
    expect((await api.post(hookPath, undefined, viewer)).status).toBe(403);
    expect((await api.post(hookPath, undefined, stranger)).status).toBe(404);

    const made = await api.post(hookPath, undefined, owner);
    expect(made.status).toBe(201);
    const key: string = made.body.key;
    expect(key).toMatch(/^dhk_[A-Za-z0-9_-]{40,}$/);
    expect(made.body.url).toBe(`${server.config.publicUrl}/deploy/${service.id}?key=${key}`);
    const shown = await api.get(hookPath, owner);
    expect(shown.body).toMatchObject({
      enabled: true,
      keyHint: key.slice(-4),
      url: `${server.config.publicUrl}/deploy/${service.id}`,
    });
    expect(shown.text).not.toContain(key);

    // The hook deploys the branch head as it is now (autoDeploy off did not).
    const v1 = git('rev-parse', 'HEAD');
    const v2 = commit('v2');
    await sleep(POLL_MS * 3);
    expect(await deploysOf(owner, service.id)).toHaveLength(1);
    const hooked = await api.post(`/deploy/${service.id}?key=${key}`);
    expect(hooked.status).toBe(200);
    expect(hooked.body.deploy.id).toMatch(/^dep-/);
    expect(await finished(api, owner, service.id, hooked.body.deploy.id)).toMatchObject({
      status: 'live',
      trigger: 'deploy_hook',
      commit: { id: v2 },
    });
    expect(await version(service.slug)).toBe('v2');

    // `ref` picks the commit; a ref that is not a commit id is a 400.
    const pinned = await api.post(`/deploy/${service.id}?key=${key}&ref=${v1}`);
    expect(pinned.status).toBe(200);
    expect((await finished(api, owner, service.id, pinned.body.deploy.id)).status).toBe('live');
    expect(await version(service.slug)).toBe('v1');
    expect((await api.post(`/deploy/${service.id}?key=${key}&ref=--help`)).status).toBe(400);

    // A key works for its own service only, and a wrong key looks like a missing service.
    const other = await gitService(owner, 'other-hooked', 'no');
    const wrong = await api.post(`/deploy/${other.service.id}?key=${key}`);
    expect(wrong.status).toBe(404);
    const missing = await api.post(`/deploy/srv-doesnotexist?key=${key}`);
    expect({ ...wrong.body, id: undefined }).toEqual({ ...missing.body, id: undefined });
    expect((await api.post(`/deploy/${service.id}?key=${key}x`)).status).toBe(404);
    expect((await api.post(`/deploy/${service.id}`)).status).toBe(400);

    // Rotation: the old key stops at once. Deletion: no key works.
    const rotated = await api.post(hookPath, undefined, owner);
    expect(rotated.body.key).not.toBe(key);
    expect((await api.post(`/deploy/${service.id}?key=${key}`)).status).toBe(404);
    const again = await api.post(`/deploy/${service.id}?key=${rotated.body.key}`);
    expect(again.status).toBe(200);
    await finished(api, owner, service.id, again.body.deploy.id);
    expect((await api.delete(hookPath, owner)).status).toBe(204);
    expect((await api.post(`/deploy/${service.id}?key=${rotated.body.key}`)).status).toBe(404);
    expect((await api.delete(hookPath, owner)).status).toBe(404);

    // Audited without the key; never in the server's log.
    const audit = await api.get('/v1/audit-logs?limit=100', owner);
    const calls = audit.body.filter((e: { auditLog: { event: string } }) => e.auditLog.event === 'TriggerDeployEvent');
    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(JSON.stringify(calls[0])).toContain('deploy_hook');
    for (const secret of [key, rotated.body.key]) {
      expect(audit.text).not.toContain(secret);
      expect(logged.join('')).not.toContain(secret);
    }
    expect(logged.join('')).toContain(`/deploy/${service.id}?key=[redacted]`);
  });
});

describe('polling a git branch for new commits', () => {
  it('deploys each new commit of a service with autoDeploy once, and leaves the same commit alone', async () => {
    const owner = await signUp(api);
    const { service, deployId } = await gitService(owner, 'polled', 'yes');
    const head = git('rev-parse', 'HEAD');
    expect(await finished(api, owner, service.id, deployId)).toMatchObject({ status: 'live', commit: { id: head } });
    await sleep(POLL_MS * 4);
    expect(await deploysOf(owner, service.id)).toHaveLength(1);

    const next = commit('v3');
    const polled = await waitFor(
      'the new commit to be deployed',
      async () => (await deploysOf(owner, service.id)).find((d: { commit?: { id: string } }) => d.commit?.id === next),
      20_000,
    );
    expect(polled.trigger).toBe('new_commit');
    expect((await finished(api, owner, service.id, polled.id)).status).toBe('live');
    expect(await version(service.slug)).toBe('v3');
    await sleep(POLL_MS * 4);
    expect(await deploysOf(owner, service.id)).toHaveLength(2);
    // A branch whose name ends like main's ref (git ls-remote matches ref endings) does not pass for main.
    git('branch', 'a/refs/heads/main', 'HEAD~1');
    await sleep(POLL_MS * 4);
    expect(await deploysOf(owner, service.id)).toHaveLength(2);

    // Turning autoDeploy off stops it.
    expect((await api.patch(`/v1/services/${service.id}`, { autoDeploy: 'no' }, owner)).status).toBe(200);
    commit('v4');
    await sleep(POLL_MS * 4);
    expect(await deploysOf(owner, service.id)).toHaveLength(2);
  });
});

/** A repo served over git's smart HTTP whose ref listing can be held: a poll that asked for the head waits there. */
async function heldGitServer(root: string) {
  let gate: Promise<void> | undefined;
  let open = () => undefined as void;
  let asked = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url!, 'http://x');
      void (async () => {
        if (url.pathname.endsWith('/info/refs')) {
          asked++;
          await gate;
        }
        serveGitHttp(req, res, {
          root,
          pathInfo: url.pathname,
          query: url.search.slice(1),
          body: Buffer.concat(chunks),
        });
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, hostAddress, r));
  return {
    url: `http://${hostAddress}:${(server.address() as { port: number }).port}/repo/.git`,
    asked: () => asked,
    hold: () => {
      gate = new Promise<void>((r) => (open = r));
    },
    release: () => open(),
    close: () => new Promise((r) => server.close(r)),
  };
}

describe('a poll under way when autoDeploy is turned off', () => {
  it('does not deploy what it finds', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'slipway-held-'));
    const dir = path.join(root, 'repo');
    cpSync(repoDir, dir, { recursive: true });
    const inDir = (...args: string[]) =>
      execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args]);
    const held = await heldGitServer(root);
    try {
      const owner = await signUp(api);
      const created = await api.post(
        '/v1/services',
        {
          type: 'web_service',
          name: 'held',
          repo: held.url,
          branch: 'main',
          autoDeploy: 'yes',
          serviceDetails: { runtime: 'node' },
        },
        owner,
      );
      expect(created.status).toBe(201);
      const { service, deployId } = created.body as { service: { id: string }; deployId: string };
      expect((await finished(api, owner, service.id, deployId)).status).toBe('live');

      // A poll asks for the head and is held; meanwhile a commit lands and autoDeploy goes off.
      held.hold();
      const before = held.asked();
      await waitFor('a poll to ask for the head', async () => held.asked() > before, 10_000);
      writeFileSync(path.join(dir, 'VERSION'), 'held');
      inDir('commit', '--quiet', '-am', 'while held');
      expect((await api.patch(`/v1/services/${service.id}`, { autoDeploy: 'no' }, owner)).status).toBe(200);
      held.release();
      await sleep(POLL_MS * 4);
      expect(await deploysOf(owner, service.id)).toHaveLength(1);
    } finally {
      held.release();
      await held.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
