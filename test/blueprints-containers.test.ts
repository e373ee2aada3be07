/**
 * `runtime: docker` and `runtime: image` services in a render.yaml (docs/blueprints.md): a sync creates them with
 * Render's fields mapped to the API's (dockerfilePath, dockerContext, dockerCommand, registryCredential; image.url and
 * image.creds, credentials by name), deploys them on Podman, and they answer through the router. Images come from
 * registries the test starts (test/helpers/containers.ts): an open one with the base image the Dockerfile builds on,
 * and one with a user that holds a ready app image, pulled with a credential made through /v1/registrycredentials.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, viaRouter } from './helpers/apps.js';
import { createUploaded, multipart, packBlueprint, servicesByName, syncEnded } from './helpers/blueprints.js';
import { signUp, type TestUser } from './helpers/client.js';
import { hasContainerEngine, startRegistry, type TestRegistry } from './helpers/containers.js';
import { hostAddresses } from './helpers/network.js';
import { useServer } from './helpers/server.js';

const host = hostAddresses()[0]!;
const openPort = 21000 + Math.floor(Math.random() * 10000);
const privatePort = openPort + 10000;
const USER = { name: 'puller', password: 'pull-secret-1' };

describe.skipIf(!hasContainerEngine)('blueprints: docker and image services', () => {
  const t = useServer({
    SLIPWAY_EGRESS_ALLOW: `${host}/32`,
    SLIPWAY_CONTAINER_INSECURE_REGISTRIES: `${host}:${openPort},${host}:${privatePort}`,
  });
  let open: TestRegistry;
  let closed: TestRegistry;
  let base: string;
  let appImage: string;
  let owner: TestUser;
  beforeAll(async () => {
    [open, closed] = await Promise.all([
      startRegistry(host, undefined, openPort),
      startRegistry(host, USER, privatePort),
    ]);
    base = open.pushBase('base/node:20');
    appImage = closed.pushApp('apps/web:1', base, 'v-pulled');
    owner = await signUp(t.api);
  }, 180_000);
  afterAll(async () => {
    await open?.close();
    await closed?.close();
  });

  const credential = async (body: Record<string, string>) => {
    const res = await t.api.post('/v1/registrycredentials', { ownerId: owner.workspaceId, ...body }, owner);
    expect(res.status, res.text).toBe(200);
    return res.body as { id: string; name: string };
  };

  const dockerfile = () => `FROM ${base}
WORKDIR /app
COPY . .
CMD ["/usr/local/bin/node", "server.js"]
`;
  const yaml = (dockerCommand = '') => `
services:
  - type: web
    name: bp-docker
    runtime: docker
    dockerfilePath: ./docker/Dockerfile
    dockerContext: .
${dockerCommand ? `    dockerCommand: ${dockerCommand}\n` : ''}    healthCheckPath: /healthz
    registryCredential:
      fromRegistryCreds:
        name: hub
    envVars:
      - key: GREETING
        value: built from a Dockerfile
  - type: web
    name: bp-image
    runtime: image
    image:
      url: ${appImage}
      creds:
        fromRegistryCreds:
          name: private-registry
    healthCheckPath: /healthz
    envVars:
      - key: GREETING
        value: pulled with a credential
`;

  it('syncs a docker and an image service, deploys both and serves them; a second sync changes nothing', async () => {
    // The docker service's credential is for its base images (none is private here); the image's signs in to the
    // registry with the user (GOOGLE_ARTIFACT: a registry type with no fixed host, offered to the image's own).
    const hub = await credential({ registry: 'DOCKER', name: 'hub', username: 'someone', authToken: 'unused' });
    const registry = await credential({
      registry: 'GOOGLE_ARTIFACT',
      name: 'private-registry',
      username: USER.name,
      authToken: USER.password,
    });
    const created = await createUploaded(t.api, owner, 'containers', yaml(), { 'docker/Dockerfile': dockerfile() });
    expect(created.status, created.text).toBe(201);
    const { blueprint, sync } = created.body;
    const first = await syncEnded(t.api, owner, blueprint.id, sync.id, 60_000);
    expect(first.error).toBeUndefined();
    const results = new Map<string, any>(first.resources.map((r: any) => [r.name, r]));
    for (const name of ['bp-docker', 'bp-image']) {
      const result = results.get(name);
      expect(result, name).toMatchObject({ kind: 'service', action: 'created', deployId: expect.any(String) });
      expect(result.warnings, name).toBeUndefined();
    }

    const services = await servicesByName(t.api, owner);
    const docker = services.get('bp-docker');
    const image = services.get('bp-image');
    expect(docker).toMatchObject({
      type: 'web_service',
      registryCredential: { id: hub.id, name: 'hub' }, // the file's name, as the API shows it
      serviceDetails: {
        runtime: 'docker',
        envSpecificDetails: { dockerfilePath: './docker/Dockerfile', dockerContext: '.', dockerCommand: '' },
      },
    });
    expect(image).toMatchObject({
      type: 'web_service',
      imagePath: appImage,
      registryCredential: { id: registry.id, name: 'private-registry' },
      serviceDetails: { runtime: 'image' },
    });
    expect(image.repo).toBeUndefined();

    for (const [service, result] of [
      [docker, results.get('bp-docker')],
      [image, results.get('bp-image')],
    ]) {
      const deploy = await finished(t.api, owner, service.id, result.deployId, 180_000);
      expect(deploy.status, `${service.name}: ${deploy.failureReason}`).toBe('live');
    }
    const routerPort = t.server.slipway.routerPort;
    expect((await viaRouter(routerPort, docker.slug)).json()).toMatchObject({ GREETING: 'built from a Dockerfile' });
    expect((await viaRouter(routerPort, image.slug)).json()).toMatchObject({
      version: 'v-pulled',
      env: { GREETING: 'pulled with a credential' },
    });

    // The same file again: nothing changes, nothing deploys.
    const again = await t.api.post(`/v1/blueprints/${blueprint.id}/sync`, {}, owner);
    expect(again.status, again.text).toBe(202);
    const second = await syncEnded(t.api, owner, blueprint.id, again.body.id);
    expect(second.error).toBeUndefined();
    for (const r of second.resources) expect(r, r.name).toMatchObject({ action: 'unchanged' });
    expect(second.resources.filter((r: any) => r.deployId)).toEqual([]);

    // A changed dockerCommand is put on the service and deployed.
    const archive = await packBlueprint(yaml('/usr/local/bin/node server.js'), { 'docker/Dockerfile': dockerfile() });
    const newer = await t.api.call('POST', `/v1/blueprints/${blueprint.id}/upload`, {
      ...owner,
      ...(await multipart({}, archive)),
    });
    expect(newer.status, newer.text).toBe(200);
    const third = await syncEnded(t.api, owner, blueprint.id, newer.body.sync.id);
    expect(third.error).toBeUndefined();
    const changed = third.resources.find((r: any) => r.name === 'bp-docker');
    expect(changed).toMatchObject({ action: 'updated', deployId: expect.any(String) });
    expect(third.resources.find((r: any) => r.name === 'bp-image')).toMatchObject({ action: 'unchanged' });
    const got = await t.api.get(`/v1/services/${docker.id}`, owner);
    expect(got.body.serviceDetails.envSpecificDetails.dockerCommand).toBe('/usr/local/bin/node server.js');
    const redeploy = await finished(t.api, owner, docker.id, changed.deployId, 180_000);
    expect(redeploy.status, redeploy.failureReason).toBe('live');
  }, 300_000);

  it('fails only the service whose credential the workspace lacks, naming it', async () => {
    const created = await createUploaded(
      t.api,
      owner,
      'unknown-credential',
      `
envVarGroups:
  - name: still-made
    envVars:
      - key: A
        value: b
services:
  - type: web
    name: bp-no-creds
    runtime: image
    image:
      url: ${appImage}
      creds:
        fromRegistryCreds:
          name: nobody-made-this
`,
    );
    expect(created.status, created.text).toBe(201);
    const sync = await syncEnded(t.api, owner, created.body.blueprint.id, created.body.sync.id);
    expect(sync.state).toBe('error');
    const results = new Map<string, any>(sync.resources.map((r: any) => [r.name, r]));
    expect(results.get('still-made')).toMatchObject({ action: 'created' });
    expect(results.get('bp-no-creds')).toMatchObject({ action: 'failed' });
    expect(results.get('bp-no-creds').error).toMatch(
      /image\.creds\.fromRegistryCreds\.name: this workspace has no registry credential named "nobody-made-this"/,
    );
    expect((await servicesByName(t.api, owner)).has('bp-no-creds')).toBe(false);
  });
});

describe('blueprints: docker and image services without a container engine', () => {
  const t = useServer({ SLIPWAY_CONTAINERS: 'off' });

  it('fails those services with the reason and applies the rest of the file', async () => {
    const owner = await signUp(t.api);
    const created = await createUploaded(
      t.api,
      owner,
      'no-engine',
      `
services:
  - type: web
    name: needs-docker
    runtime: docker
  - type: worker
    name: needs-image
    runtime: image
    image:
      url: ghcr.io/acme/worker:1
  - type: web
    name: native
    runtime: node
    startCommand: node server.js
`,
    );
    expect(created.status, created.text).toBe(201);
    const sync = await syncEnded(t.api, owner, created.body.blueprint.id, created.body.sync.id);
    expect(sync.state).toBe('error');
    const results = new Map<string, any>(sync.resources.map((r: any) => [r.name, r]));
    expect(results.get('native')).toMatchObject({ action: 'created', deployId: expect.any(String) });
    for (const [name, runtime] of Object.entries({ 'needs-docker': 'docker', 'needs-image': 'image' })) {
      expect(results.get(name), name).toMatchObject({ action: 'failed' });
      expect(results.get(name).error).toMatch(
        new RegExp(
          `^runtime "${runtime}" needs a container engine, which this machine does not have \\(.*SLIPWAY_CONTAINERS=off`,
        ),
      );
    }
    expect(sync.error).toMatch(/2 resource\(s\) failed: needs-docker \(runtime "docker" needs a container engine/);
  });
});
