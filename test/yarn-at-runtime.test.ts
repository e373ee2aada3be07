import { describe, expect, it } from 'vitest';
import { deployFixture, packFixture, viaRouter } from './helpers/apps.js';
import { allDeploysSettled, multipart, servicesByName, syncEnded } from './helpers/blueprints.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

// This machine's registry mirror drops npm's signatures, which Corepack checks for a version a packageManager names.
const t = useServer({ SLIPWAY_COREPACK_INTEGRITY_KEYS: '0' });

describe('yarn and pnpm at run time', () => {
  it("preview-environment's blueprint, started with `cd backend && yarn start`, goes live", async () => {
    const owner = await signUp(t.api);
    const body = await multipart({ name: 'preview-environment' }, await packFixture('preview-environment'));
    const created = await t.api.call('POST', '/v1/blueprints', { ...owner, ...body });
    expect(created.status, created.text).toBe(201);
    const sync = await syncEnded(t.api, owner, created.body.blueprint.id, created.body.sync.id);
    expect(sync.state, JSON.stringify(sync.error)).toBe('success');
    const [deploy] = await allDeploysSettled(t.api, owner, 180_000);
    expect(deploy.status, deploy.failureReason).toBe('live');
    const service = (await servicesByName(t.api, owner)).get('express-backend');
    const res = await viaRouter(t.server.slipway.routerPort, service.slug, '/');
    expect(res.json()).toMatchObject({ message: 'Hello World' });

    // The instance ran yarn itself (the start command is not a bare script name), offline, from the build's copy.
    const logs = await t.api.get(
      `/v1/logs?ownerId=${owner.workspaceId}&resource=${service.id}&type=app&limit=50`,
      owner,
    );
    const lines = logs.body.logs.map((l: any) => l.message).join('\n');
    expect(lines).toContain('yarn run v1.22.22');
    expect(lines).toContain('Example app listening on port');
  }, 240_000);

  it("a service's own start command runs the yarn its build downloaded, from the deploy's copy", async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'preview-environment', {
      serviceDetails: {
        runtime: 'node',
        envSpecificDetails: {
          buildCommand: 'cd backend && yarn',
          startCommand: 'ls "$COREPACK_HOME/v1/yarn" && cd backend && yarn start',
        },
      },
    });
    expect(deploy.status, deploy.failureReason).toBe('live');
    const logs = await t.api.get(
      `/v1/logs?ownerId=${owner.workspaceId}&resource=${service.id}&type=app&limit=50`,
      owner,
    );
    expect(logs.body.logs.map((l: any) => l.message)).toContain('1.22.22');
  }, 240_000);
});
