import { describe, expect, it } from 'vitest';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

// A health timeout as long as production's order of minutes: a failure must not wait for it.
const t = useServer({ SLIPWAY_HEALTH_CHECK_TIMEOUT_SECONDS: '120' });

describe("Render's apps, unchanged", () => {
  it('fastify-hello-world, which listens on all interfaces only when RENDER is set, goes live', async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'fastify-hello-world');
    expect(deploy.status, deploy.failureReason).toBe('live');
    const res = await viaRouter(t.server.slipway.routerPort, service.slug, '/');
    expect(res.json()).toEqual({ hello: 'world' });
  });

  it('an app that listens on localhost only fails within seconds, not at the health timeout, saying how to fix it', async () => {
    const owner = await signUp(t.api);
    const started = Date.now();
    const { deploy } = await deployFixture(t.api, owner, 'fastify-hello-world', {
      serviceDetails: {
        runtime: 'node',
        envSpecificDetails: {
          startCommand: `node -e "require('http').createServer((q, s) => s.end('x')).listen(process.env.PORT, '127.0.0.1')"`,
        },
      },
    });
    expect(deploy.status).toBe('update_failed');
    expect(deploy.failureReason).toMatch(/listens on localhost:\d+ only; listen on 0\.0\.0\.0/);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("ends a start failure's and a build failure's reason with the output's last lines, secrets masked", async () => {
    const owner = await signUp(t.api);
    const secret = { key: 'API_TOKEN', value: 's3cr3t-token-value' };
    const crashed = await deployFixture(t.api, owner, 'fastify-hello-world', {
      envVars: [secret],
      serviceDetails: {
        runtime: 'node',
        envSpecificDetails: {
          startCommand: `node -e "console.error('cannot connect with ' + process.env.API_TOKEN); process.exit(1)"`,
        },
      },
    });
    expect(crashed.deploy.status).toBe('update_failed');
    const reason = crashed.deploy.failureReason as string;
    expect(reason).toContain("The app's last output:\ncannot connect with ********");
    expect(reason).toContain(`GET /v1/logs?resource=${crashed.service.id}&instance=${crashed.service.id}-`);
    expect(reason).not.toContain(secret.value);

    const broken = await deployFixture(t.api, owner, 'fastify-hello-world', {
      envVars: [secret],
      serviceDetails: {
        runtime: 'node',
        envSpecificDetails: { buildCommand: 'echo "token $API_TOKEN"; echo "npm ERR! Missing script: build"; exit 2' },
      },
    });
    expect(broken.deploy.status).toBe('build_failed');
    const built = broken.deploy.failureReason as string;
    expect(built).toMatch(/^the build command exited with 2: its last output:\n/);
    expect(built).toContain('token ********\nnpm ERR! Missing script: build');
    expect(built).toContain(`GET /v1/logs?resource=${broken.service.id}&type=build`);
    expect(built).not.toContain(secret.value);
  });
});
