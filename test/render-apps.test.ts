import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
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

  it('hapi-quick-start, with its port hard-coded to 3000, is routed to the port it opened, and an event says so', async () => {
    const owner = await signUp(t.api);
    const started = Date.now();
    const { service, deploy } = await deployFixture(t.api, owner, 'hapi-quick-start');
    expect(deploy.status, deploy.failureReason).toBe('live');
    expect(Date.now() - started).toBeLessThan(10_000);
    const res = await viaRouter(t.server.slipway.routerPort, service.slug, '/');
    expect(res.text).toBe('Hello World!');
    const events = (
      await t.api.get(`/v1/services/${service.id}/events?limit=50&includeSlipwayEvents=true`, owner)
    ).body.map((e: { event: { type: string; details: unknown } }) => e.event);
    expect(events.find((e: { type: string }) => e.type === 'port_detected')?.details).toMatchObject({
      port: 3000,
      expected: 10000,
    });
  });

  it('an app whose hard-coded port is on localhost fails within seconds, naming the port and the fix', async () => {
    const owner = await signUp(t.api);
    const started = Date.now();
    const { deploy } = await deployFixture(t.api, owner, 'hapi-quick-start', {
      serviceDetails: {
        runtime: 'node',
        envSpecificDetails: {
          startCommand: `node -e "require('http').createServer((q, s) => s.end('x')).listen(3000, 'localhost')"`,
        },
      },
    });
    expect(deploy.status).toBe('update_failed');
    expect(deploy.failureReason).toMatch(
      /listens on localhost:3000 only, not on \$PORT \(10000\); listen on 0\.0\.0\.0/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('create-react-app, a static site, goes live with an artifact of its build/ only, its hashed bundles cached for a year', async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'create-react-app', {
      type: 'static_site',
      serviceDetails: { buildCommand: 'npm run build', publishPath: 'build' },
    });
    expect(deploy.status, deploy.failureReason).toBe('live');
    const page = await viaRouter(t.server.slipway.routerPort, service.slug, '/');
    const bundle = /src="(\/static\/js\/main\.[0-9a-f]{8}\.js)"/.exec(page.text)?.[1];
    expect(bundle).toBeDefined();
    const js = await viaRouter(t.server.slipway.routerPort, service.slug, bundle!);
    expect(js.text).toContain('Learn React');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    // The build left 16 MiB of cache in node_modules/.cache beside a few KB of build/: the artifact holds build/ only.
    const artifact = path.join(t.server.dataDir, 'services', service.id, 'artifacts', deploy.id);
    expect(readdirSync(artifact)).toEqual(['build']);
    const kib = Number(execFileSync('du', ['-s', '-k', '--', artifact], { encoding: 'utf8' }).split('\t')[0]);
    expect(kib).toBeLessThan(100);
  });

  it("hints at the cause a failed start's output shows: a missing module, file, command or directory", async () => {
    const owner = await signUp(t.api);
    const startWith = (startCommand: string) =>
      deployFixture(t.api, owner, 'fastify-hello-world', {
        serviceDetails: { runtime: 'node', envSpecificDetails: { startCommand } },
      });
    const [moduleMissing, readOnly, commandMissing, dirMissing] = await Promise.all([
      startWith(`node -e "require('express')"`),
      startWith(`node -e "require('fs').writeFileSync('uploads.json', '[]')"`),
      startWith('yarnx start'),
      startWith('cd backend && node server.js'),
    ]);
    for (const { deploy } of [moduleMissing, readOnly, commandMissing, dirMissing])
      expect(deploy.status).toBe('update_failed');
    expect(moduleMissing.deploy.failureReason).toContain(
      `(the module "express" is not installed: add it to package.json's "dependencies"`,
    );
    expect(readOnly.deploy.failureReason).toContain("(the app was refused a file: a deploy's files are read-only");
    expect(commandMissing.deploy.failureReason).toContain(
      '(command not found: "yarnx" is not installed or not on the PATH)',
    );
    expect(dirMissing.deploy.failureReason).toContain('(the directory "backend" is not in the deploy');
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
