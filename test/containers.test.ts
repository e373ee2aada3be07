/**
 * Docker and image services on Podman (docs/containers.md): built from a Dockerfile in a build namespace, pulled from a
 * real registry with a credential, run in the instance's namespace under its cgroup, and judged as native instances are.
 * The base image is made from this machine's files (test/helpers/containers.ts); nothing comes from the internet.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, packFixture, upload, viaRouter } from './helpers/apps.js';
import { signUp, type Client, type TestUser } from './helpers/client.js';
import { hasContainerEngine, startRegistry, type TestRegistry } from './helpers/containers.js';
import { hostAddresses } from './helpers/network.js';
import { useServer } from './helpers/server.js';

const host = hostAddresses()[0]!;
const registryPort = 21000 + Math.floor(Math.random() * 20000);
const registryAddress = `${host}:${registryPort}`;

/** The fixture app with a Dockerfile: a dependency layer (package.json), then the source, a build arg, dockerCommand-able. */
const dockerfile = (base: string, extra = '') => `FROM ${base}
WORKDIR /app
COPY package.json ./
RUN echo "installed at $(date +%s%N)" > /app/deps.txt
COPY . .
ARG GREETING=unset
RUN echo "$GREETING" > /app/greeting.txt
${extra}
CMD ["node", "server.js"]
`;

describe.skipIf(!hasContainerEngine)('containers (Podman)', () => {
  const t = useServer({
    SLIPWAY_EGRESS_ALLOW: `${host}/32`,
    SLIPWAY_CONTAINER_INSECURE_REGISTRIES: registryAddress,
  });
  let registry: TestRegistry;
  let base: string;
  let owner: TestUser;
  let api: Client;
  beforeAll(async () => {
    registry = await startRegistry(host, undefined, registryPort);
    base = registry.pushBase('base/node:20');
    api = t.api;
    owner = await signUp(api);
  }, 180_000);
  afterAll(() => registry?.close());

  async function dockerService(files: Record<string, string>, details: Record<string, unknown> = {}) {
    const created = await api.post(
      '/v1/services',
      {
        type: 'web_service',
        name: `docker-${Math.random().toString(36).slice(2, 8)}`,
        serviceDetails: { runtime: 'docker', healthCheckPath: '/healthz', ...details },
        envVars: [{ key: 'GREETING', value: 'hello from a build arg' }],
      },
      owner,
    );
    expect(created.status, created.text).toBe(201);
    const service = created.body.service as { id: string; slug: string };
    const up = await upload(api, owner, service.id, await packFixture('node-web', files));
    expect(up.status, up.text).toBe(201);
    return { service, deployId: up.body.deployId as string };
  }

  it('builds a Dockerfile from an uploaded archive and serves it through the router, as a non-root user', async () => {
    const { service, deployId } = await dockerService({ Dockerfile: dockerfile(base) });
    const deploy = await finished(api, owner, service.id, deployId, 180_000);
    expect(deploy.status, deploy.failureReason).toBe('live');
    const reply = await viaRouter(t.server.slipway.routerPort, service.slug);
    expect(reply.status).toBe(200);
    const body = JSON.parse(reply.text) as { uid: number; env: Record<string, string> };
    expect(body.uid).not.toBe(0);
    expect(body.env.PORT).toBe('10000');
    expect(body.env.GREETING).toBe('hello from a build arg');
    const read = await viaRouter(t.server.slipway.routerPort, service.slug, '/read?greeting.txt');
    expect(JSON.parse(read.text)).toMatchObject({ read: true, content: 'hello from a build arg\n' });
    const got = await api.get(`/v1/services/${service.id}`, owner);
    expect(got.body.serviceDetails.envSpecificDetails).toMatchObject({
      dockerfilePath: './Dockerfile',
      dockerContext: '.',
      dockerCommand: '',
    });
  }, 240_000);
});
