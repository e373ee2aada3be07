/**
 * kill -9 of Slipway during a blueprint sync: after the restart the sync has ended as failed with a reason, and the
 * next sync completes from where the dead one stopped.
 */
import { describe, expect, it } from 'vitest';
import { packFixture } from './helpers/apps.js';
import {
  allDeploysSettled,
  multipart,
  NOTES_YAML,
  servicesByName,
  syncEnded,
  untilWaitingOnDatabase,
} from './helpers/blueprints.js';
import { signUp } from './helpers/client.js';
import { hasPostgresServer, requireOrSkip } from './helpers/datastores.js';
import { within } from './helpers/process.js';
import { useRestartableSlipway } from './helpers/restartable.js';

const localOk = requireOrSkip('postgres', hasPostgresServer());

describe.skipIf(!localOk)('blueprint sync: kill -9', () => {
  const { start } = useRestartableSlipway({ SLIPWAY_BLUEPRINT_SYNC_STALE_MS: '1000' });

  it('ends the interrupted sync as failed with a reason, and the next sync completes', async () => {
    const a = await start();
    const owner = await signUp(a.api);
    const body = await multipart({ name: 'notes' }, await packFixture('db-web', { 'render.yaml': NOTES_YAML }));
    const created = await a.api.call('POST', '/v1/blueprints', { ...owner, ...body });
    expect(created.status).toBe(201);
    const bp = created.body.blueprint;
    await untilWaitingOnDatabase(a.api, owner, bp.id);
    a.proc.child.kill('SIGKILL');
    await within(a.proc.exited, 15_000, 'exit after SIGKILL');

    const b = await start();
    const interrupted = await syncEnded(b.api, owner, bp.id, created.body.sync.id, 10_000);
    expect(interrupted).toMatchObject({
      state: 'error',
      error: expect.stringMatching(/Slipway stopped during this sync/),
    });
    expect(interrupted.resources.map((r: any) => r.kind)).toContain('postgres'); // what it did is kept
    expect((await b.api.get(`/v1/blueprints/${bp.id}`, owner)).body.status).toBe('error');

    const next = await b.api.post(`/v1/blueprints/${bp.id}/sync`, {}, owner);
    expect(next.status).toBe(202);
    const done = await syncEnded(b.api, owner, bp.id, next.body.id, 60_000);
    expect(done.error).toBeUndefined();
    expect(done.resources.find((r: any) => r.kind === 'postgres')).toMatchObject({ action: 'unchanged' });
    const deploys = await allDeploysSettled(b.api, owner);
    expect(deploys.filter((d) => d.status === 'live')).toHaveLength(1);
    expect([...(await servicesByName(b.api, owner)).keys()]).toEqual(['notes']);
    const dbs = await b.api.get('/v1/postgres', owner);
    expect(dbs.body).toHaveLength(1); // adopted by name, never made twice
    b.proc.child.kill('SIGTERM');
    await within(b.proc.exited, 30_000, 'exit after SIGTERM');
  }, 120_000); // two Slipway starts, each with nginx and the router process, and the waits above: not vitest's 30 s
});
