/**
 * Two Slipway processes on one Postgres, each caching principals and roles (src/core/principal-cache.ts):
 * a revocation, sign-out or membership change made through one process is refused by the other
 * within a second, although the other had the principal cached. Postgres only (TEST_DATABASE_URL).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, client, createApiKey, signUp, uniqueEmail, type Client } from './helpers/client.js';
import {
  freePort,
  removeDataDir,
  spawnSlipway,
  waitFor,
  waitForHealthy,
  type SlipwayProcess,
} from './helpers/process.js';
import { bootServer, TEST_DATABASE_URL, type TestServer } from './helpers/server.js';

/** Polls `check` on process B until it holds; fails when that takes more than a second. */
const withinASecond = (what: string, check: () => Promise<boolean>) => waitFor(what, check, 1000, 20);

describe.skipIf(!TEST_DATABASE_URL)('principal cache across processes', () => {
  let a: TestServer;
  let other: SlipwayProcess;
  let dataDir: string;
  let viaA: Client;
  let viaB: Client;

  beforeAll(async () => {
    a = await bootServer();
    dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-principals-'));
    const port = await freePort();
    other = spawnSlipway({
      DATABASE_URL: a.databaseUrl!,
      SLIPWAY_DATA_DIR: dataDir,
      SLIPWAY_PORT: String(port),
      SLIPWAY_ROUTER_PORT: '0',
      SLIPWAY_PRINCIPAL_CACHE_SECONDS: '60', // far longer than the second the tests allow
    });
    await waitForHealthy(`http://127.0.0.1:${port}`, 30_000);
    viaA = client(a.url);
    viaB = client(`http://127.0.0.1:${port}`);
  }, 60_000);

  afterAll(async () => {
    await other?.kill();
    await a?.close();
    if (dataDir) await removeDataDir(dataDir);
  });

  it('an API key revoked through A is refused by B within a second', async () => {
    const owner = await signUp(viaA);
    const key = await createApiKey(viaA, owner);
    const byKey = { token: key.token };
    expect((await viaB.get('/v1/users', byKey)).status).toBe(200);
    expect((await viaB.get('/v1/api-keys', byKey)).status).toBe(200); // its role too
    expect((await viaA.delete(`/v1/api-keys/${key.id}`, owner)).status).toBe(204);
    expect((await viaA.get('/v1/users', byKey)).status).toBe(401);
    await withinASecond('B to refuse the revoked key', async () => (await viaB.get('/v1/users', byKey)).status === 401);
  });

  it('B hears changes again after its LISTEN connection is cut', async () => {
    const db = new pg.Client({ connectionString: a.databaseUrl! });
    await db.connect();
    const listeners = `select pid from pg_stat_activity where datname = current_database() and query ilike 'listen %'`;
    try {
      const before = (await db.query(listeners)).rowCount ?? 0;
      expect(before).toBeGreaterThanOrEqual(2); // A's and B's, at least
      await db.query(`select pg_terminate_backend(pid) from (${listeners}) l`);
      await waitFor(
        'the listeners to reconnect',
        async () => ((await db.query(listeners)).rowCount ?? 0) >= before,
        10_000,
      );
    } finally {
      await db.end();
    }
    const owner = await signUp(viaA);
    const key = await createApiKey(viaA, owner);
    const byKey = { token: key.token };
    expect((await viaB.get('/v1/users', byKey)).status).toBe(200);
    expect((await viaA.delete(`/v1/api-keys/${key.id}`, owner)).status).toBe(204);
    await withinASecond(
      'B to refuse the key revoked after the cut',
      async () => (await viaB.get('/v1/users', byKey)).status === 401,
    );
  });

  it('a session signed out through A is refused by B within a second', async () => {
    const user = await signUp(viaA);
    expect((await viaB.get('/v1/users', user)).status).toBe(200);
    expect((await viaA.post('/v1/auth/logout', undefined, user)).status).toBe(204);
    await withinASecond('B to refuse the signed-out session', async () => {
      const res = await viaB.get('/v1/users', user);
      return res.status === 401 && res.body.code === 'unauthorized';
    });
  });

  it('a developer demoted to viewer through A is refused a write by B within a second', async () => {
    const owner = await signUp(viaA);
    const dev = await addMember(viaA, owner, 'developer');
    let n = 0;
    const createGroup = (via = viaB) =>
      via.post('/v1/env-groups', { name: `group-${n++}`, envVars: [], ownerId: owner.workspaceId }, dev);
    expect((await createGroup(viaA)).status).toBe(201);
    expect((await createGroup()).status).toBe(201);
    const demoted = await viaA.patch(
      `/v1/team-members/${dev.id}?ownerId=${owner.workspaceId}`,
      { role: 'viewer' },
      owner,
    );
    expect(demoted.status).toBe(200);
    expect((await createGroup(viaA)).status).toBe(403);
    await withinASecond('B to refuse the demoted member a write', async () => {
      const res = await createGroup();
      return res.status === 403 && res.body.code === 'forbidden';
    });
    // Still a member: reads go on.
    expect((await viaB.get(`/v1/env-groups?ownerId=${owner.workspaceId}`, dev)).status).toBe(200);
  });

  it('a member removed through A loses the workspace on B within a second', async () => {
    const owner = await signUp(viaA);
    const dev = await addMember(viaA, owner, 'developer');
    const list = `/v1/env-groups?ownerId=${owner.workspaceId}`;
    expect((await viaA.get(list, dev)).status).toBe(200);
    expect((await viaB.get(list, dev)).status).toBe(200);
    expect((await viaA.delete(`/v1/team-members/${dev.id}?ownerId=${owner.workspaceId}`, owner)).status).toBe(204);
    expect((await viaA.get(list, dev)).status).toBe(404);
    await withinASecond('B to hide the workspace from the removed member', async () => {
      return (await viaB.get(list, dev)).status === 404;
    });
  });

  it('an invite accepted through A opens the workspace on B within a second', async () => {
    const owner = await signUp(viaA);
    const email = uniqueEmail('joiner');
    const joiner = await signUp(viaA, { email });
    const list = `/v1/env-groups?ownerId=${owner.workspaceId}`;
    expect((await viaB.get(list, joiner)).status).toBe(404); // B now knows "not a member"
    const invite = await viaA.post('/v1/team-invites', { email, role: 'viewer' }, owner);
    expect((await viaA.post(`/v1/team-invites/${invite.body.token}/accept`, undefined, joiner)).status).toBe(200);
    await withinASecond('B to let the new member in', async () => (await viaB.get(list, joiner)).status === 200);
  });
});
