/**
 * `deployMode: deploy_only` ("deploy without building") runs the live build with the service's settings as they are
 * now: a start command changed since the build is the one that runs. A rollback restores what was live, command too.
 */
import { expect, it } from 'vitest';
import { deployFixture, finished, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();

it('deploy_only runs the start command set since the build, or the detected one once it is cleared; rollback keeps its own', async () => {
  const owner = await signUp(t.api);
  // plain-web answers with the arguments and GREETING it was started with; its package.json start is `node server.js`.
  const { service, deploy: built } = await deployFixture(t.api, owner, 'plain-web');
  expect(built.status).toBe('live');
  const app = async () => (await viaRouter(t.server.slipway.routerPort, service.slug, '/')).json();
  expect(await app()).toEqual({ args: [], greeting: null });

  const setStartCommand = async (startCommand: string) =>
    expect(
      (
        await t.api.patch(
          `/v1/services/${service.id}`,
          { serviceDetails: { envSpecificDetails: { startCommand } } },
          owner,
        )
      ).status,
    ).toBe(200);
  const deployOnly = async () => {
    const res = await t.api.post(`/v1/services/${service.id}/deploys`, { deployMode: 'deploy_only' }, owner);
    expect(res.status).toBe(201);
    return finished(t.api, owner, service.id, res.body.id);
  };

  await setStartCommand('GREETING=hello exec node server.js --changed');
  const changed = await deployOnly();
  expect(changed).toMatchObject({ status: 'live', sourceId: built.sourceId });
  expect(await app()).toEqual({ args: ['--changed'], greeting: 'hello' });

  // Cleared: the command the build's files call for (package.json's start script), as a build would pick.
  await setStartCommand('');
  expect(await deployOnly()).toMatchObject({ status: 'live' });
  expect(await app()).toEqual({ args: [], greeting: null });

  // Neither redeploy built anything.
  const builds = await t.api.get(`/v1/services/${service.id}/events?type=build_started`, owner);
  expect(builds.body.map((i: any) => i.event.details.deployId)).toEqual([built.id]);
  // Render's GET /events/:id answers one of them as the list does; an unknown id is a 404.
  const one = await t.api.get(`/v1/events/${builds.body[0].event.id}`, owner);
  expect([one.status, one.body]).toEqual([200, builds.body[0].event]);
  expect((await t.api.get('/v1/events/evt-00000000000000000000', owner)).status).toBe(404);

  // A rollback restores exactly what was live then: its command, whatever the settings say now.
  const rollback = await t.api.post(`/v1/services/${service.id}/rollback`, { deployId: changed.id }, owner);
  expect(rollback.status).toBe(201);
  expect(await finished(t.api, owner, service.id, rollback.body.id)).toMatchObject({ status: 'live' });
  expect(await app()).toEqual({ args: ['--changed'], greeting: 'hello' });
});

it('deploy_only answers 409 when the build has no start command of its own and none is set any more', async () => {
  const owner = await signUp(t.api);
  // worker has neither a Procfile nor a start script nor an index.js: only the configured command starts it.
  const { service, deploy } = await deployFixture(t.api, owner, 'worker', {
    type: 'background_worker',
    serviceDetails: { runtime: 'node', envSpecificDetails: { startCommand: 'node worker.js' } },
  });
  expect(deploy.status).toBe('live');
  const cleared = { serviceDetails: { envSpecificDetails: { startCommand: '' } } };
  expect((await t.api.patch(`/v1/services/${service.id}`, cleared, owner)).status).toBe(200);
  const res = await t.api.post(`/v1/services/${service.id}/deploys`, { deployMode: 'deploy_only' }, owner);
  expect(res.status).toBe(409);
  expect(res.body.message).toContain('set envSpecificDetails.startCommand');
});
