import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoSlug } from '../src/core/service-state/env.js';
import { FIXTURES, finished, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer({ SLIPWAY_GIT_ALLOW_LOCAL: '1' });
const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-render-env-'));
chmodSync(scratch, 0o755); // git runs as the builds' user, which must read a local repo
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The names Render's documentation lists for all runtimes (test/fixtures/render/environment-variables.txt). */
const documented = readFileSync(path.join(FIXTURES, '..', 'render', 'environment-variables.txt'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() && !line.startsWith('#'));

/** A git repo at `<scratch>/acme/shop` with the node-web fixture on `main`: its head commit. */
function makeRepo(dir: string) {
  mkdirSync(dir, { recursive: true });
  cpSync(path.join(FIXTURES, 'node-web'), dir, { recursive: true });
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
      encoding: 'utf8',
    }).trim();
  git('init', '--quiet', '--initial-branch=main');
  git('add', '.');
  git('commit', '--quiet', '-m', 'first');
  for (let d = dir; d !== scratch; d = path.dirname(d)) chmodSync(d, 0o755);
  return git('rev-parse', 'HEAD');
}

describe("Render's environment", () => {
  it('gives an instance and its build every variable Render documents for all runtimes', async () => {
    expect(documented.length).toBeGreaterThanOrEqual(13);
    const repoDir = path.join(scratch, 'acme', 'shop');
    const commit = makeRepo(repoDir);
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: 'render-env',
        repo: `file://${repoDir}`,
        branch: 'main',
        serviceDetails: {
          runtime: 'node',
          plan: 'starter',
          envSpecificDetails: {
            buildCommand: 'echo "$RENDER $RENDER_SERVICE_TYPE $RENDER_GIT_COMMIT" > build-env.txt',
          },
        },
      },
      owner,
    );
    expect(created.status).toBe(201);
    const { service, deployId } = created.body;
    expect((await finished(t.api, owner, service.id, deployId)).status).toBe('live');

    const port = t.server.slipway.routerPort;
    const { env } = (await viaRouter(port, service.slug)).json();
    expect(documented.filter((name) => !(name in env))).toEqual([]);
    expect(env).toMatchObject({
      RENDER: 'true',
      IS_PULL_REQUEST: 'false',
      RENDER_SERVICE_ID: service.id,
      RENDER_SERVICE_NAME: 'render-env',
      RENDER_SERVICE_TYPE: 'web',
      RENDER_EXTERNAL_HOSTNAME: `${service.slug}.localhost`,
      RENDER_EXTERNAL_URL: env.SLIPWAY_EXTERNAL_URL,
      RENDER_INSTANCE_ID: env.SLIPWAY_INSTANCE_ID,
      RENDER_DISCOVERY_SERVICE: service.slug,
      RENDER_CPU_COUNT: '0.5',
      RENDER_GIT_COMMIT: commit,
      RENDER_GIT_BRANCH: 'main',
      RENDER_GIT_REPO_SLUG: repoDir.slice(1),
    });
    expect(env.RENDER_EXTERNAL_URL).toMatch(new RegExp(`^https?://${service.slug}\\.localhost`));

    // The build saw them too.
    const built = (await viaRouter(port, service.slug, '/read?build-env.txt')).json();
    expect(built.content.trim()).toBe(`true web ${commit}`);
  });

  it("names other types as Render does, and leaves Render's names free for a service's own variables", async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      {
        type: 'background_worker',
        name: 'render-env-worker',
        serviceDetails: { runtime: 'node' },
        envVars: [{ key: 'RENDER_API_KEY', value: 'rnd_own' }],
      },
      owner,
    );
    expect(created.status).toBe(201);
    const { service } = created.body;
    const platform = Object.fromEntries(
      (await t.api.get(`/v1/services/${service.id}/platform-env`, owner)).body.map((v: any) => [v.key, v]),
    );
    expect(platform.RENDER_SERVICE_TYPE.value).toBe('worker');
    expect(platform.RENDER_EXTERNAL_URL.value).toBe('');
    expect(platform.RENDER_EXTERNAL_HOSTNAME.value).toBe('');
    expect(platform.RENDER_INSTANCE_ID).toEqual({ key: 'RENDER_INSTANCE_ID', value: null, perInstance: true });
    expect(platform.RENDER_GIT_COMMIT).toBeUndefined(); // not built from git
    const own = await t.api.get(`/v1/services/${service.id}/env-vars`, owner);
    expect(own.body.map((i: any) => i.envVar.key)).toContain('RENDER_API_KEY');
  });

  it("reads a repo's owner/name as RENDER_GIT_REPO_SLUG", () => {
    expect(repoSlug('https://github.com/render-examples/fastify-hello-world.git')).toBe(
      'render-examples/fastify-hello-world',
    );
    expect(repoSlug('https://gitlab.example.com/group/sub/app/')).toBe('group/sub/app');
    expect(repoSlug('git@github.com:acme/shop.git')).toBe('acme/shop');
    expect(repoSlug('not a url')).toBeUndefined();
  });
});
