/**
 * Render's buildPlan: set on create and by PATCH, shown in every response; a field PATCHed in the wrong place is a
 * 400 rather than a 200 that changed nothing; a build command that is not installed is named.
 * (Build memory by buildPlan, and its out-of-memory reason: oom.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { deployFixture } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();

describe('buildPlan', () => {
  it('is set on create and by PATCH, and every response shows it', async () => {
    const owner = await signUp(t.api);
    const created = await t.api.post(
      '/v1/services',
      { type: 'web_service', name: 'bp', serviceDetails: { runtime: 'node', buildPlan: 'performance' } },
      owner,
    );
    expect(created.status).toBe(201);
    const id = created.body.service.id;
    expect(created.body.service.serviceDetails).toMatchObject({ buildPlan: 'performance', plan: 'starter' });

    const patched = await t.api.patch(
      `/v1/services/${id}`,
      { serviceDetails: { buildPlan: 'starter', plan: 'standard' } },
      owner,
    );
    expect(patched.status).toBe(200);
    expect(patched.body.serviceDetails).toMatchObject({ buildPlan: 'starter', plan: 'standard' });
    expect((await t.api.get(`/v1/services/${id}`, owner)).body.serviceDetails).toMatchObject({
      buildPlan: 'starter',
      plan: 'standard',
    });
    const listed = await t.api.get('/v1/services', owner);
    expect(listed.body.find((i: any) => i.service.id === id).service.serviceDetails.buildPlan).toBe('starter');

    const site = await t.api.post(
      '/v1/services',
      { type: 'static_site', name: 'bp-site', serviceDetails: { buildPlan: 'performance' } },
      owner,
    );
    expect(site.body.service.serviceDetails.buildPlan).toBe('performance');
  });

  it('refuses unknown plans, and a plan outside serviceDetails, without changing anything', async () => {
    const owner = await signUp(t.api);
    const id = (
      await t.api.post('/v1/services', { type: 'web_service', name: 'bp2', serviceDetails: { runtime: 'node' } }, owner)
    ).body.service.id;
    const bad = await t.api.patch(`/v1/services/${id}`, { serviceDetails: { buildPlan: 'huge' } }, owner);
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([expect.objectContaining({ field: 'serviceDetails.buildPlan' })]);
    const misplaced = await t.api.patch(`/v1/services/${id}`, { plan: 'pro' }, owner);
    expect(misplaced.status).toBe(400);
    expect(misplaced.body.details).toEqual([
      { field: 'plan', message: 'is not a field of this body: it goes in serviceDetails.plan' },
    ]);
    // Read from the route's own schema: a field further down is named; one that is nowhere in it is not.
    const command = await t.api.patch(`/v1/services/${id}`, { startCommand: 'node x.js' }, owner);
    expect(command.body.details[0].message).toMatch(
      /: it goes in serviceDetails\.(envSpecificDetails\.)?startCommand$/,
    );
    const unknown = await t.api.patch(`/v1/services/${id}`, { nosuchfield: 1 }, owner);
    expect(unknown.body.details).toEqual([{ field: 'nosuchfield', message: 'is not a field of this body' }]);
    const inherited = await t.api.patch(`/v1/services/${id}`, { constructor: 1 }, owner);
    expect(inherited.body.details).toEqual([{ field: 'constructor', message: 'is not a field of this body' }]);
    expect((await t.api.get(`/v1/services/${id}`, owner)).body.serviceDetails).toMatchObject({
      plan: 'starter',
      buildPlan: 'starter',
    });
  });
});

describe('a build command that is not installed', () => {
  it('fails the build naming the missing command', async () => {
    const owner = await signUp(t.api);
    const { deploy } = await deployFixture(t.api, owner, 'node-web', {
      serviceDetails: { runtime: 'node', envSpecificDetails: { buildCommand: 'true && no-such-tool install' } },
    });
    expect(deploy.status).toBe('build_failed');
    expect(deploy.failureReason).toMatch(
      /^the build command exited with 127 \(command not found: "no-such-tool" is not installed or not on the PATH\)/,
    );
  });
});
