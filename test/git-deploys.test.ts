import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURES, finished, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();
const repoDir = mkdtempSync(path.join(tmpdir(), 'slipway-git-'));
afterAll(() => rmSync(repoDir, { recursive: true, force: true }));
const git = (...args: string[]) => execFileSync('git', ['-C', repoDir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' }).trim();

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
    const created = await t.api.post('/v1/services', { type: 'web_service', name: 'from-git', repo: `file://${repoDir}`, branch: 'main', serviceDetails: { runtime: 'node' } }, owner);
    expect(created.status).toBe(201);
    const { service, deployId } = created.body;
    expect(deployId).toMatch(/^dep-/);
    const live = await finished(t.api, owner, service.id, deployId);
    expect(live).toMatchObject({ status: 'live', commit: { id: second, message: 'second version' } });
    expect((await viaRouter(t.server.slipway.routerPort, service.slug)).json()).toMatchObject({ version: 'v2', env: { SLIPWAY_GIT_COMMIT: second, SLIPWAY_GIT_BRANCH: 'main' } });

    const pinned = await t.api.post(`/v1/services/${service.id}/deploys`, { commitId: first }, owner);
    expect(pinned.status).toBe(201);
    expect(await finished(t.api, owner, service.id, pinned.body.id)).toMatchObject({ status: 'live', commit: { id: first } });
    expect((await viaRouter(t.server.slipway.routerPort, service.slug)).json().version).toBe('v1');

    const missing = await t.api.post(`/v1/services/${service.id}/deploys`, { commitId: 'deadbeefdeadbeef' }, owner);
    const failed = await finished(t.api, owner, service.id, missing.body.id);
    expect(failed.status).toBe('build_failed');
    expect(failed.failureReason).toMatch(/checkout|clone/);
    expect((await t.api.post(`/v1/services/${service.id}/deploys`, { commitId: '--help' }, owner)).status).toBe(400);
  });
});
