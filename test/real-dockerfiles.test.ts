/**
 * Three real Dockerfiles from the Blueprint corpus's repositories (docs/containers.md, "Real Dockerfiles"), each
 * changed only in its FROM lines, built and deployed as `runtime: docker` services on Podman: render-examples/
 * arlo-render-template's frontend (npm install, `npm start`), render-examples/create-context-graph's Next.js frontend
 * (three stages, `npm ci`, a standalone server) and render-examples/ghost (the base image's ENV and content, its
 * ENTRYPOINT reset, a shell script that writes Render's RENDER_EXTERNAL_URL into the app's config). The base images are
 * made from this machine's files and npm packages come from a registry the test serves: nothing from the internet.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, finished, packFixture, upload, viaRouter, type ExtraFiles } from './helpers/apps.js';
import { signUp, type TestUser } from './helpers/client.js';
import { hasContainerEngine, startRegistry, type TestRegistry } from './helpers/containers.js';
import { hostAddresses } from './helpers/network.js';
import { startNpmRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import { useServer } from './helpers/server.js';

const host = hostAddresses()[0]!;
const registryPort = 21000 + Math.floor(Math.random() * 20000);
const registryAddress = `${host}:${registryPort}`;

/** The fixture's Dockerfile as its repository has it, with every `FROM <image>` on `image` (a stage's `AS` kept). */
const fromLocal = (fixture: string, file: string, image: string) =>
  readFileSync(path.join(FIXTURES, fixture, file), 'utf8').replace(/^FROM \S+/gm, `FROM ${image}`);

describe.skipIf(!hasContainerEngine)('real Dockerfiles from the Blueprint corpus (Podman)', () => {
  const t = useServer({
    SLIPWAY_EGRESS_ALLOW: `${host}/32`,
    SLIPWAY_CONTAINER_INSECURE_REGISTRIES: registryAddress,
  });
  let registry: TestRegistry;
  let npm: NpmRegistry;
  /** node:20-slim's part that these Dockerfiles use: node and npm, on busybox. */
  let nodeImage: string;
  let owner: TestUser;
  beforeAll(async () => {
    registry = await startRegistry(host, undefined, registryPort);
    nodeImage = registry.pushBase('library/node:20-slim', { npm: true });
    npm = await startNpmRegistry(host, ['next', 'react-scripts']);
    owner = await signUp(t.api);
  }, 240_000);
  afterAll(async () => {
    await registry?.close();
    await npm?.close();
  });

  /** Creates a docker service from the fixture (with `files` over it), deploys it, and expects it live. */
  async function deployed(fixture: string, files: ExtraFiles, details: Record<string, unknown> = {}) {
    const created = await t.api.post(
      '/v1/services',
      { type: 'web_service', name: fixture, serviceDetails: { runtime: 'docker', ...details } },
      owner,
    );
    expect(created.status, created.text).toBe(201);
    const service = created.body.service as { id: string; slug: string };
    const up = await upload(t.api, owner, service.id, await packFixture(fixture, files));
    expect(up.status, up.text).toBe(201);
    const deploy = await finished(t.api, owner, service.id, up.body.deployId as string, 240_000);
    const buildLog = JSON.stringify(
      (await t.api.get(`/v1/logs?resource=${service.id}&type=build&limit=100`, owner)).body,
    );
    expect(deploy.status, `${deploy.failureReason}\n${buildLog}`).toBe('live');
    return { service, buildLog };
  }

  const lockOf = (fixture: string) => npm.lockFor(readFileSync(path.join(FIXTURES, fixture, 'package.json'), 'utf8'));
  const get = (slug: string, urlPath = '/') => viaRouter(t.server.slipway.routerPort, slug, urlPath);

  it('arlo-render-template/frontend: npm install from its lock, then `npm start` serves the app', async () => {
    const { service, buildLog } = await deployed('arlo-frontend', {
      Dockerfile: fromLocal('arlo-frontend', 'Dockerfile', nodeImage),
      'package-lock.json': lockOf('arlo-frontend'),
    });
    expect(buildLog).toMatch(/added 1 package/);
    const page = await get(service.slug);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<title>Arlo</title>');
    expect((await get(service.slug, '/static/js/bundle.js')).text).toContain('In-Meeting AI Assistant');
  }, 300_000);

  it('create-context-graph: three stages (npm ci, next build, a standalone server with only the build)', async () => {
    const { service } = await deployed(
      'context-graph-frontend',
      {
        'Dockerfile.frontend': fromLocal('context-graph-frontend', 'Dockerfile.frontend', nodeImage),
        'package-lock.json': lockOf('context-graph-frontend'),
      },
      { envSpecificDetails: { dockerfilePath: './Dockerfile.frontend' } },
    );
    const page = await get(service.slug);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Healthcare Context Graph');
    const script = /src="(\/_next\/static\/chunks\/page-[0-9a-f]{16}\.js)"/.exec(page.text)?.[1];
    expect(script, page.text).toBeDefined();
    expect((await get(service.slug, script)).text).toContain('Ask the graph');
    expect((await get(service.slug, '/robots.txt')).text).toContain('User-agent');
  }, 300_000);

  it("ghost: the base image's ENV and content, ENTRYPOINT [] reset, RENDER_EXTERNAL_URL written into its config", async () => {
    const ghostImage = registry.pushBuilt('library/ghost:5.14.1', path.join(FIXTURES, '../images/ghost'), {
      BASE: nodeImage,
    });
    const { service } = await deployed('ghost', { Dockerfile: fromLocal('ghost', 'Dockerfile', ghostImage) });
    const env = (await t.api.get(`/v1/services/${service.id}/platform-env`, owner)).body as Array<{
      key: string;
      value: string | null;
    }>;
    const externalUrl = env.find((v) => v.key === 'RENDER_EXTERNAL_URL')?.value;
    expect(externalUrl).toMatch(/^https?:\/\//);
    const reply = await get(service.slug);
    expect(reply.status, reply.text).toBe(200);
    // start.sh copied the image's content.orig into GHOST_CONTENT; updateConfig.js wrote Render's URL.
    expect(JSON.parse(reply.text)).toEqual({ url: externalUrl, themes: ['casper'] });
  }, 300_000);
});
