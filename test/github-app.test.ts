/**
 * The GitHub App end to end, against a faithful fake of GitHub (test/helpers/fake-github.ts) whose repositories are
 * served by the real `git http-backend` to a current installation token only: install → list → a service from a
 * private repo → a signed push → that commit live, with its commit statuses sent.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, finished, viaRouter } from './helpers/apps.js';
import { syncEnded } from './helpers/blueprints.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { createGitHubApp } from '../src/integrations/github.js';
import { startFakeGitHub, type FakeGitHub } from './helpers/fake-github.js';
import { hostAddresses } from './helpers/network.js';
import { waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

const root = mkdtempSync(path.join(tmpdir(), 'slipway-gh-'));
const work = path.join(root, 'work');
const git = (dir: string, ...args: string[]) =>
  execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    encoding: 'utf8',
  }).trim();
/** Commits `files` in the working copy and pushes to the bare repo GitHub serves; returns the commit id. */
function pushCommit(files: Record<string, string>, message: string, branch = 'main') {
  const exists = git(work, 'branch', '--list', branch) !== '';
  git(work, 'checkout', '--quiet', ...(exists ? [branch] : ['-b', branch]));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(work, name), text);
  git(work, 'add', '.');
  git(work, 'commit', '--quiet', '-m', message);
  git(work, 'push', '--quiet', 'origin', branch);
  const commit = git(work, 'rev-parse', 'HEAD');
  git(work, 'checkout', '--quiet', 'main');
  return commit;
}

/** GitHub is public to builds; this fake is on the host, which builds reach only where the operator allows. */
const hostAddress = hostAddresses()[0]!;
let gh: FakeGitHub;
let server: TestServer;
let api: Client;
const logged: string[] = [];

beforeAll(async () => {
  gh = await startFakeGitHub(root, { host: hostAddress });
  gh.addInstallation(42, 'acme', ['private-app', 'docs', 'api', 'web', 'infra']);
  gh.addInstallation(43, 'globex', ['other']);
  const bare = path.join(root, 'acme', 'private-app.git');
  mkdirSync(bare, { recursive: true });
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', bare]);
  cpSync(path.join(FIXTURES, 'node-web'), work, { recursive: true });
  git(work, 'init', '--quiet', '--initial-branch=main');
  git(work, 'remote', 'add', 'origin', bare);
  pushCommit({ VERSION: 'v1' }, 'version v1');
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => logged.push(chunk.toString()));
  server = await bootServer(
    {
      ...gh.appEnv(),
      SLIPWAY_EGRESS_ALLOW: `${hostAddress}/32`,
      SLIPWAY_GIT_POLL_INTERVAL_MS: '0',
    },
    undefined,
    { stream, level: 'info' },
  );
  api = client(server.url);
});
afterAll(async () => {
  await server?.close();
  await gh?.close();
  rmSync(root, { recursive: true, force: true });
});

/**
 * Installs the App for `user`'s workspace through the install link and GitHub's setup callback, as a GitHub user who
 * can reach `reach` (default: the installation itself).
 */
async function install(user: TestUser, installationId: number, reach = [installationId]) {
  const start = await api.get('/v1/github/install', user);
  expect(start.status).toBe(302);
  const location = new URL(start.headers.get('location')!);
  expect(`${location.origin}${location.pathname}`).toBe(`${gh.url}/apps/${gh.slug}/installations/new`);
  const state = location.searchParams.get('state')!;
  const code = gh.installCode(reach);
  const url = `/v1/github/callback?installation_id=${installationId}&setup_action=install&state=${state}&code=${code}`;
  return { state, reply: await api.get(url, user) };
}
const pushPayload = (after: string, files: string[], installationId = 42) => ({
  ref: 'refs/heads/main',
  after,
  installation: { id: installationId },
  repository: {
    html_url: `${gh.url}/acme/private-app`,
    clone_url: `${gh.url}/acme/private-app.git`,
    default_branch: 'main',
  },
  commits: [{ id: after, added: [], modified: files, removed: [] }],
});

describe('the GitHub App', () => {
  it('installs, lists repos across pages, deploys a private repo, deploys a pushed commit and reports its status', async () => {
    const owner = await signUp(api);
    const { state, reply } = await install(owner, 42);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      configured: true,
      installed: true,
      installationId: '42',
      account: { login: 'acme', type: 'Organization' },
      repositorySelection: 'selected',
    });

    // The state is bound to its workspace and sealed; one installation is one workspace's.
    const stranger = await signUp(api);
    expect((await api.get(`/v1/github/callback?installation_id=42&state=${state}`, stranger)).status).toBe(404);
    expect(
      (await api.get(`/v1/github/callback?installation_id=42&state=${state.slice(0, -4)}AAAA`, owner)).status,
    ).toBe(400);
    // The installation id in the callback is a claim: the GitHub user behind the code must reach it.
    const spoofed = await install(stranger, 42, [43]);
    expect(spoofed.reply.status).toBe(403);
    expect((await api.get(`/v1/github/callback?installation_id=42&state=${spoofed.state}`, stranger)).status).toBe(400);
    const taken = await install(stranger, 42);
    expect(taken.reply.status).toBe(409);
    expect((await install(stranger, 999)).reply.status).toBe(400);

    // Five repositories, two per GitHub page: Slipway follows the Link headers, then pages with its own cursor.
    const names: string[] = [];
    let cursor = '';
    for (let page = 0; page < 5; page++) {
      const res = await api.get(`/v1/github/repos?limit=2${cursor ? `&cursor=${cursor}` : ''}`, owner);
      expect(res.status).toBe(200);
      if (res.body.length === 0) break;
      names.push(...res.body.map((r: { repository: { fullName: string } }) => r.repository.fullName));
      cursor = res.body.at(-1).cursor;
    }
    expect(names).toEqual(['acme/private-app', 'acme/docs', 'acme/api', 'acme/web', 'acme/infra']);

    // A private repo: cloned with an installation token (git's credential helper), never in a URL.
    const created = await api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: 'gh-app',
        repo: `${gh.url}/acme/private-app.git`,
        branch: 'main',
        serviceDetails: { runtime: 'node' },
      },
      owner,
    );
    expect(created.status).toBe(201);
    const { service, deployId } = created.body;
    const first = await finished(api, owner, service.id, deployId);
    expect(first.status, first.failureReason).toBe('live');
    expect(gh.requests.some((r) => r.url.includes('git-upload-pack') && r.auth === 'Basic')).toBe(true);

    // A signed push deploys that exact commit, and GitHub hears pending then success for it.
    const v2 = pushCommit({ VERSION: 'v2' }, 'version v2');
    const pushed = await gh.deliver(server.url, 'push', pushPayload(v2, ['VERSION']));
    expect(pushed.status).toBe(200);
    expect(pushed.body.deploys).toHaveLength(1);
    expect(await finished(api, owner, service.id, pushed.body.deploys[0])).toMatchObject({
      status: 'live',
      trigger: 'new_commit',
      commit: { id: v2 },
    });
    expect((await viaRouter(server.slipway.routerPort, service.slug)).json().version).toBe('v2');
    const sent = await waitFor('the success status', async () => {
      const mine = gh.statuses.filter((s) => s.sha === v2);
      return mine.some((s) => s.state === 'success') ? mine : undefined;
    });
    expect(sent.map((s) => s.state)).toEqual(['pending', 'success']);
    expect(sent[1]).toMatchObject({ owner: 'acme', repo: 'private-app', context: 'slipway' });
    expect(sent[1]!.target_url).toBe(
      `${server.config.publicUrl}/v1/services/${service.id}/deploys/${pushed.body.deploys[0]}`,
    );

    // A redelivery is ignored; a bad or missing signature is a 401.
    const replay = await gh.deliver(server.url, 'push', pushPayload(v2, ['VERSION']), {
      deliveryId: pushed.deliveryId,
    });
    expect(replay.body).toEqual({ duplicate: true });
    expect((await gh.deliver(server.url, 'push', pushPayload(v2, ['VERSION']), { secret: 'wrong' })).status).toBe(401);
    const unsigned = await api.post('/v1/github/webhook', pushPayload(v2, ['VERSION']));
    expect(unsigned.status).toBe(401);
    // Nothing is parsed before the signature holds: an unsigned body that is not even JSON is refused as unsigned.
    const junk = await api.call('POST', '/v1/github/webhook', {
      raw: Buffer.from(`{"a":${'['.repeat(1000)}`),
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': 'junk-1' },
    });
    expect(junk.status).toBe(401);
    // Another installation's push names no service of this workspace.
    expect((await gh.deliver(server.url, 'push', pushPayload(v2, ['VERSION'], 43))).body.deploys).toEqual([]);

    // Render's buildFilter: a commit that touches only ignored paths is recorded as commit_ignored, not deployed.
    expect(
      (
        await api.patch(
          `/v1/services/${service.id}`,
          { buildFilter: { paths: ['src/**', 'VERSION'], ignoredPaths: ['**/*.md'] } },
          owner,
        )
      ).status,
    ).toBe(200);
    const docsOnly = pushCommit({ 'README.md': 'docs' }, 'docs only');
    const skipped = await gh.deliver(server.url, 'push', pushPayload(docsOnly, ['README.md']));
    expect(skipped.body).toMatchObject({ deploys: [], ignored: [service.id] });
    const events = await api.get(`/v1/services/${service.id}/events?limit=50`, owner);
    expect(events.body.map((e: { event: { type: string } }) => e.event.type)).toContain('commit_ignored');
    const counted = await gh.deliver(server.url, 'push', pushPayload(docsOnly, ['README.md', 'src/a/b.js']));
    expect(counted.body.deploys).toHaveLength(1);
    await finished(api, owner, service.id, counted.body.deploys[0]);

    // A repo the installation does not reach fails its clone, and the failure names no token.
    const unreachable = await api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: 'gh-other',
        repo: `${gh.url}/globex/other.git`,
        branch: 'main',
        serviceDetails: { runtime: 'node' },
      },
      owner,
    );
    const failedClone = await finished(api, owner, unreachable.body.service.id, unreachable.body.deployId);
    expect(failedClone.status).toBe('build_failed');
    expect(failedClone.failureReason).toMatch(/clone/);

    // Tokens were cached (one for three clones) and appear nowhere: not in logs, URLs, deploy bodies or errors.
    expect(gh.tokens).toHaveLength(1);
    const deploys = await api.get(`/v1/services/${service.id}/deploys?limit=20`, owner);
    const details = await Promise.all(
      deploys.body.map((d: { deploy: { id: string } }) =>
        api.get(`/v1/services/${service.id}/deploys/${d.deploy.id}`, owner),
      ),
    );
    for (const token of gh.tokens) {
      expect(logged.join('')).not.toContain(token);
      expect(gh.requests.map((r) => r.url).join('\n')).not.toContain(token);
      for (const d of details) expect(d.text).not.toContain(token);
      expect(JSON.stringify(failedClone)).not.toContain(token);
    }

    // A blueprint on the private repo (read with the token) syncs when a push reaches its repo and branch.
    const blueprintYaml = (value: string) =>
      `envVarGroups:\n  - name: gh-settings\n    envVars:\n      - key: LEVEL\n        value: "${value}"\n`;
    pushCommit({ 'render.yaml': blueprintYaml('one') }, 'blueprint one');
    const bp = await api.post(
      '/v1/blueprints',
      { name: 'gh-blueprint', repo: `${gh.url}/acme/private-app`, branch: 'main', autoSync: true },
      owner,
    );
    expect(bp.status).toBe(201);
    const firstSync = await syncEnded(api, owner, bp.body.blueprint.id, bp.body.sync.id);
    expect(firstSync.state, firstSync.error).toBe('success');
    const level = async () => {
      const groups = await api.get('/v1/env-groups?name=gh-settings', owner);
      const group = await api.get(`/v1/env-groups/${groups.body[0].id}`, owner);
      return group.body.envVars.find((v: { key: string }) => v.key === 'LEVEL')?.value;
    };
    expect(await level()).toBe('one');
    const yamlPush = pushCommit({ 'render.yaml': blueprintYaml('two') }, 'blueprint two');
    const synced = await gh.deliver(server.url, 'push', pushPayload(yamlPush, ['render.yaml']));
    expect(synced.body).toMatchObject({ deploys: [], ignored: [service.id] }); // render.yaml is outside its filter
    expect(synced.body.syncs).toHaveLength(1);
    expect((await syncEnded(api, owner, bp.body.blueprint.id, synced.body.syncs[0])).state).toBe('success');
    expect(await level()).toBe('two');

    // Render's pull-request previews: opened -> a preview (parentServer, the head branch) deploying the head,
    // synchronize -> the new head, closed -> deleted. A fork's pull request gets none.
    const previewsOn = await api.patch(
      `/v1/services/${service.id}`,
      { serviceDetails: { previews: { generation: 'automatic' } } },
      owner,
    );
    expect(previewsOn.body.serviceDetails.previews).toEqual({ generation: 'automatic' });
    const pr = (action: string, sha: string, headRepo = 'acme/private-app') => ({
      action,
      number: 7,
      pull_request: {
        head: { ref: 'feature', sha, repo: { full_name: headRepo } },
        base: { ref: 'main', repo: { full_name: 'acme/private-app' } },
      },
      installation: { id: 42 },
      repository: { html_url: `${gh.url}/acme/private-app`, default_branch: 'main' },
    });
    const f1 = pushCommit({ VERSION: 'pr-1' }, 'feature one', 'feature');
    expect((await gh.deliver(server.url, 'pull_request', pr('opened', f1, 'someone/fork'))).body.previews).toEqual([]);
    const opened = await gh.deliver(server.url, 'pull_request', pr('opened', f1));
    expect(opened.body.previews).toHaveLength(1);
    const previewId = opened.body.previews[0];
    const preview = (await api.get(`/v1/services/${previewId}`, owner)).body;
    expect(preview).toMatchObject({ name: 'gh-app-pr-7', branch: 'feature', repo: `${gh.url}/acme/private-app.git` });
    expect(preview.serviceDetails).toMatchObject({
      parentServer: { id: service.id, name: 'gh-app' },
      previews: { generation: 'off' },
    });
    const previewLive = async (sha: string) =>
      waitFor(
        `the preview at ${sha}`,
        async () => {
          const list = await api.get(`/v1/services/${previewId}/deploys?limit=5`, owner);
          const d = list.body.find((i: { deploy: { commit?: { id: string } } }) => i.deploy.commit?.id === sha)?.deploy;
          return d && ['live', 'build_failed', 'update_failed'].includes(d.status) ? d : undefined;
        },
        60_000,
      );
    expect((await previewLive(f1)).status).toBe('live');
    expect((await viaRouter(server.slipway.routerPort, preview.slug)).json().version).toBe('pr-1');
    const f2 = pushCommit({ VERSION: 'pr-2' }, 'feature two', 'feature');
    expect((await gh.deliver(server.url, 'pull_request', pr('synchronize', f2))).body.previews).toEqual([previewId]);
    expect((await previewLive(f2)).status).toBe('live');
    expect((await viaRouter(server.slipway.routerPort, preview.slug)).json().version).toBe('pr-2');
    expect((await gh.deliver(server.url, 'pull_request', pr('closed', f2))).body.previews).toEqual([previewId]);
    expect((await api.get(`/v1/services/${previewId}`, owner)).status).toBe(404);

    // Uninstalling on GitHub unlinks it.
    await gh.deliver(server.url, 'installation', { action: 'deleted', installation: { id: 42 } });
    expect((await api.get('/v1/github/status', owner)).body).toMatchObject({ configured: true, installed: false });
  }, 90_000); // five deploys end to end (two pushes, two previews): 24 s alone on two cores
});

/** One MiB of spaces: every body below is written from it, so the test's own memory stays out of the figure. */
const CHUNK = Buffer.alloc(1024 * 1024, 0x20);
/** A POST to the webhook declaring `total` bytes, of which only `first` (at most a MiB) are sent until `rest()`. */
function heldDelivery(headers: Record<string, string>, total: number, first = 64 * 1024) {
  const url = new URL(`${server.url}/v1/github/webhook`);
  const req = http.request({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': String(total), ...headers },
  });
  req.on('error', () => undefined); // a refused body's connection may close under the rest of it
  const answered = new Promise<{ status: number; retryAfter?: string; body: any }>((resolve) =>
    req.on('response', (res) => {
      let text = '';
      res
        .setEncoding('utf8')
        .on('data', (c: string) => (text += c))
        .on('end', () =>
          resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], body: JSON.parse(text) }),
        );
    }),
  );
  req.write(CHUNK.subarray(0, first));
  async function rest() {
    for (let left = total - first; left > 0; left -= CHUNK.length)
      if (!req.write(CHUNK.subarray(0, Math.min(left, CHUNK.length)))) await once(req, 'drain');
    req.end();
  }
  return { answered, rest, abort: () => req.destroy() };
}
const PENDING = Symbol('pending');
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<typeof PENDING>((r) => setTimeout(() => r(PENDING), ms))]);
const wellFormed = `sha256=${'0'.repeat(64)}`; // the right shape, the wrong HMAC
const MB = 1024 * 1024;

// Issue 29: unsigned 25 MB bodies were buffered before the signature check; 8 in parallel took RSS +215 MB.
describe('unverified webhook bodies', () => {
  it('are refused from the headers alone, before the body is read', async () => {
    const cases: Array<[Record<string, string>, number, RegExp]> = [
      [{ 'x-github-event': 'push', 'x-github-delivery': 'd-1' }, 401, /X-Hub-Signature-256/],
      [{ 'x-hub-signature-256': 'sha256=abc', 'x-github-event': 'push', 'x-github-delivery': 'd-2' }, 401, /Signature/],
      [
        { 'x-hub-signature-256': wellFormed, 'x-github-event': 'check_run', 'x-github-delivery': 'd-3' },
        400,
        /check_run/,
      ],
      [{ 'x-hub-signature-256': wellFormed, 'x-github-event': 'push' }, 400, /X-GitHub-Delivery/],
    ];
    for (const [headers, status, message] of cases) {
      const delivery = heldDelivery(headers, 24 * MB);
      try {
        // Only 64 KiB of the 24 MiB were sent: an answer now was given from the headers.
        const answer = await within(delivery.answered, 5000);
        expect(answer, JSON.stringify(headers)).not.toBe(PENDING);
        expect(answer).toMatchObject({ status, body: { message: expect.stringMatching(message) } });
      } finally {
        delivery.abort();
      }
    }
  });

  it('are held to one budget: past it, 503 with Retry-After before reading; a signed delivery still gets through', async () => {
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20);
    const flood = Array.from({ length: 8 }, (_, i) =>
      heldDelivery(
        { 'x-hub-signature-256': wellFormed, 'x-github-event': 'push', 'x-github-delivery': `flood-${i}` },
        24 * MB,
        MB,
      ),
    );
    try {
      const states = flood.map(() => PENDING as typeof PENDING | { status: number; retryAfter?: string });
      flood.forEach((d, i) => void d.answered.then((a) => (states[i] = a)));
      await waitFor('six of the eight refused', async () => states.filter((a) => a !== PENDING).length >= 6, 10_000);
      await new Promise((r) => setTimeout(r, 300)); // no seventh comes
      const refused = states.filter((a) => a !== PENDING);
      expect(refused).toHaveLength(6); // 64 MiB holds two bodies of 24 MiB
      for (const a of refused) expect(a).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/) });

      // Two bodies hold 48 MiB of the budget: a real (small, signed) delivery still fits.
      const signed = await gh.deliver(server.url, 'ping', { zen: 'Keep it logically awesome.', hook_id: 1 });
      expect(signed).toMatchObject({ status: 200, body: { duplicate: false } });

      // The two admitted bodies, once whole, fail their signature; then the budget is free again.
      const admitted = flood.filter((_, i) => states[i] === PENDING);
      await Promise.all(admitted.map((d) => d.rest()));
      for (const d of admitted) expect((await d.answered).status).toBe(401);
      clearInterval(sampler);
      const after = heldDelivery(
        { 'x-hub-signature-256': wellFormed, 'x-github-event': 'push', 'x-github-delivery': 'after-flood' },
        24 * MB,
      );
      await after.rest();
      expect((await after.answered).status).toBe(401);
    } finally {
      clearInterval(sampler);
      for (const d of flood) d.abort();
    }
    const grew = Math.round((rssPeak - rssBefore) / MB);
    console.log(`eight 24 MiB unsigned bodies at once: RSS +${grew} MiB`);
    expect(grew).toBeLessThan(200); // two bodies (chunks, the text, its HMAC input), not eight: about 310 before
  });
});

// Issue 29 (first round, still open): GitHub signs only the body, so a captured push replayed under a new
// X-GitHub-Delivery passed the HMAC and deployed again (an old one: production back to an old commit).
describe('replayed deliveries', () => {
  it('a signed push sent again under a new delivery id deploys nothing; a new push of the same commits does', async () => {
    const owner = await signUp(api);
    expect((await install(owner, 43)).reply.status).toBe(200);
    const created = await api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: 'gh-replay',
        repo: `${gh.url}/globex/other.git`,
        branch: 'main',
        autoDeploy: 'no',
        serviceDetails: { runtime: 'node' },
      },
      owner,
    );
    const id = created.body.service.id;
    expect((await api.patch(`/v1/services/${id}`, { autoDeploy: 'yes' }, owner)).status).toBe(200);
    const now = Math.floor(Date.now() / 1000);
    const push = (after: string, pushedAt: number) => ({
      ref: 'refs/heads/main',
      before: 'b'.repeat(40),
      after,
      installation: { id: 43 },
      repository: {
        id: 4343,
        html_url: `${gh.url}/globex/other`,
        default_branch: 'main',
        pushed_at: pushedAt,
      },
      commits: [{ id: after, added: [], modified: ['VERSION'], removed: [] }],
    });
    const deploysOf = async () => (await api.get(`/v1/services/${id}/deploys?limit=50`, owner)).body.length;

    const first = await gh.deliver(server.url, 'push', push('c'.repeat(40), now));
    expect(first.body.deploys).toHaveLength(1);
    // The same signed body under a new delivery id (gh.deliver makes one each time).
    const replay = await gh.deliver(server.url, 'push', push('c'.repeat(40), now));
    expect(replay.deliveryId).not.toBe(first.deliveryId);
    expect(replay).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(await deploysOf()).toBe(1);
    // Pushing the same commits again later (force-pushed away and back) is a new push: it deploys.
    const again = await gh.deliver(server.url, 'push', push('c'.repeat(40), now + 5));
    expect(again.body.deploys).toHaveLength(1);
    // A push from more than a week ago is one whose replay Slipway no longer remembers: never deployed.
    const old = await gh.deliver(server.url, 'push', push('d'.repeat(40), now - 8 * 86_400));
    expect(old).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(await deploysOf()).toBe(2);
  });
});

describe('installation tokens', () => {
  it('are cached until 5 minutes before they expire, then renewed', async () => {
    for (const [ttlMinutes, expected] of [
      [60, 1],
      [4, 3],
    ] as const) {
      const fake = await startFakeGitHub(root, { tokenTtlMs: ttlMinutes * 60_000 });
      fake.addInstallation(7, 'initech', ['tps']);
      try {
        const host = createGitHubApp({ ...fake, ...fake.appClient, apiUrl: fake.apiUrl, webUrl: fake.url });
        for (let i = 0; i < 3; i++) await host.installationToken('7');
        expect(fake.tokens, `tokens that live ${ttlMinutes} minutes`).toHaveLength(expected);
        expect(await host.installation('7')).toMatchObject({ account: 'initech', repositorySelection: 'selected' });
      } finally {
        await fake.close();
      }
    }
  });
});

describe('the GitHub App, unconfigured', () => {
  let bare: TestServer;
  beforeAll(async () => {
    bare = await bootServer({});
  });
  afterAll(() => bare?.close());
  it('answers 501 not_configured on every /v1/github route, naming the settings', async () => {
    const plain = client(bare.url);
    const user = await signUp(plain);
    const replies = await Promise.all([
      plain.get('/v1/github/install', user),
      plain.get('/v1/github/status', user),
      plain.get('/v1/github/repos', user),
      plain.get('/v1/github/callback?installation_id=1&state=x', user),
      plain.post('/v1/github/webhook', { zen: 'hi' }),
    ]);
    for (const reply of replies) {
      expect(reply.status).toBe(501);
      expect(reply.body.code).toBe('not_configured');
      expect(reply.body.message).toContain('SLIPWAY_GITHUB_APP_ID');
    }
  });
});
