import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allowedGitProtocols, gitCloneCommand, gitTransport } from '../src/core/builds/commands.js';
import { run } from '../src/lib/exec.js';
import { FIXTURES, finished, viaRouter } from './helpers/apps.js';
import { client, signUp } from './helpers/client.js';
import { bootServer, useServer } from './helpers/server.js';

const t = useServer({ SLIPWAY_GIT_ALLOW_LOCAL: '1' });
const repoDir = mkdtempSync(path.join(tmpdir(), 'slipway-git-'));
chmodSync(repoDir, 0o755); // git runs as the builds' user, which must read a local repo (docs/deploys.md, "Git")
afterAll(() => rmSync(repoDir, { recursive: true, force: true }));
const git = (...args: string[]) =>
  execFileSync('git', ['-C', repoDir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    encoding: 'utf8',
  }).trim();

/** A repository with two commits on `main`: VERSION v1, then v2. */
function makeRepo() {
  cpSync(path.join(FIXTURES, 'node-web'), repoDir, { recursive: true });
  git('init', '--quiet', '--initial-branch=main');
  writeFileSync(path.join(repoDir, 'VERSION'), 'v1');
  git('add', '.');
  git('commit', '--quiet', '-m', 'first version');
  const first = git('rev-parse', 'HEAD');
  writeFileSync(path.join(repoDir, 'VERSION'), 'v2');
  git('commit', '--quiet', '-am', 'second version');
  return { first, second: git('rev-parse', 'HEAD') };
}

describe('deploys from a git repository', () => {
  it('deploys the branch head on create, then a given commitId, recording the commit', async () => {
    const { first, second } = makeRepo();
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: 'from-git',
        repo: `file://${repoDir}`,
        branch: 'main',
        serviceDetails: { runtime: 'node' },
      },
      owner,
    );
    expect(created.status).toBe(201);
    const { service, deployId } = created.body;
    expect(deployId).toMatch(/^dep-/);
    const live = await finished(t.api, owner, service.id, deployId);
    expect(live).toMatchObject({ status: 'live', commit: { id: second, message: 'second version' } });
    expect((await viaRouter(t.server.slipway.routerPort, service.slug)).json()).toMatchObject({
      version: 'v2',
      env: { SLIPWAY_GIT_COMMIT: second, SLIPWAY_GIT_BRANCH: 'main' },
    });

    const pinned = await t.api.post(`/v1/services/${service.id}/deploys`, { commitId: first }, owner);
    expect(pinned.status).toBe(201);
    expect(await finished(t.api, owner, service.id, pinned.body.id)).toMatchObject({
      status: 'live',
      commit: { id: first },
    });
    expect((await viaRouter(t.server.slipway.routerPort, service.slug)).json().version).toBe('v1');

    const missing = await t.api.post(`/v1/services/${service.id}/deploys`, { commitId: 'deadbeefdeadbeef' }, owner);
    const failed = await finished(t.api, owner, service.id, missing.body.id);
    expect(failed.status).toBe('build_failed');
    expect(failed.failureReason).toMatch(/checkout|clone/);
    expect((await t.api.post(`/v1/services/${service.id}/deploys`, { commitId: '--help' }, owner)).status).toBe(400);
  });
});

describe('which repos may be cloned', () => {
  it('reads a repo as git does: scheme, host:path (ssh), a path (file), or name:: (a remote helper)', () => {
    expect(
      [
        'https://github.com/a/b',
        'HTTP://h/r',
        'ssh://git@h/r',
        'git+ssh://h/r',
        'git@github.com:a/b.git',
        'git://h/r',
        'file:///srv/r',
        '/srv/r',
        './r',
        'dir/with:colon',
        'ext::sh -c x',
        'fd::3',
      ].map(gitTransport),
    ).toEqual(['https', 'HTTP', 'ssh', 'ssh', 'ssh', 'git', 'file', 'file', 'file', 'file', 'ext', 'fd']);
  });

  it('refuses local paths and file:// unless SLIPWAY_GIT_ALLOW_LOCAL is set, and remote helpers always', async () => {
    const server = await bootServer();
    try {
      const api = client(server.url);
      const owner = await signUp(api);
      // (No whitespace: a repo with any is refused before its transport is read.)
      for (const repo of [
        repoDir,
        `file://${repoDir}`,
        'ext::sh%-c%touch%/tmp/slipway-ext',
        'fd::3',
        'HTTP://example.com/r',
      ]) {
        const res = await api.post(
          '/v1/services',
          { type: 'web_service', name: 'local', repo, serviceDetails: { runtime: 'node' } },
          owner,
        );
        expect([res.status, res.body.code], repo).toEqual([400, 'bad_request']);
      }
      expect((await api.get('/v1/services', owner)).body).toEqual([]);
      expect(
        (
          await t.api.post(
            '/v1/services',
            { type: 'web_service', name: 'ext', repo: 'ext::sh', serviceDetails: { runtime: 'node' } },
            await signUp(t.api),
          )
        ).status,
      ).toBe(400);
    } finally {
      await server.close();
    }
  });

  it('git itself clones over the allowed transports only (a repo stored before the setting changed)', async () => {
    const src = mkdtempSync(path.join(tmpdir(), 'slipway-git-src-'));
    const dest = mkdtempSync(path.join(tmpdir(), 'slipway-git-dest-'));
    try {
      execFileSync('git', ['-C', src, 'init', '--quiet']);
      execFileSync('git', [
        '-C',
        src,
        '-c',
        'user.name=t',
        '-c',
        'user.email=t@example.com',
        'commit',
        '--quiet',
        '--allow-empty',
        '-m',
        'x',
      ]);
      const clone = (repo: string, allowLocal: boolean, to: string) =>
        run(gitCloneCommand(repo, path.join(dest, to), { protocols: allowedGitProtocols(allowLocal) }), {
          timeoutMs: 10_000,
        });
      const refused = await clone(`file://${src}`, false, 'a');
      expect(refused.exitCode).not.toBe(0);
      expect(refused.output).toMatch(/transport 'file' not allowed/);
      expect((await clone(src, false, 'b')).output).toMatch(/transport 'file' not allowed/); // a bare path is file too
      expect((await clone(`file://${src}`, true, 'c')).exitCode).toBe(0);
    } finally {
      rmSync(src, { recursive: true, force: true });
      rmSync(dest, { recursive: true, force: true });
    }
  });
});
