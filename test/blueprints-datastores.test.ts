/**
 * A blueprint with a project environment, Postgres and key value wired into a web service through `fromDatabase` and
 * `fromService`: the app reads both real servers through the variables the sync set.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { packFixture, viaRouter } from './helpers/apps.js';
import {
  allDeploysSettled,
  multipart,
  NOTES_YAML,
  servicesByName,
  syncEnded,
  untilWaitingOnDatabase,
} from './helpers/blueprints.js';
import { signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { hasPostgresServer, hasRedisServer, requireOrSkip, untilStatus } from './helpers/datastores.js';
import { useServer } from './helpers/server.js';

const localOk = requireOrSkip('postgres and redis-server', hasPostgresServer() && hasRedisServer());

const YAML = `
projects:
  - name: shop
    environments:
      - name: production
        services:
          - type: web
            name: shop-web
            runtime: node
            startCommand: node server.js
            healthCheckPath: /healthz
            envVars:
              - key: DATABASE_URL
                fromDatabase:
                  name: shop-db
                  property: connectionString
              - key: REDIS_URL
                fromService:
                  name: shop-cache
                  type: keyvalue
                  property: connectionString
              - key: REDIS_HOSTPORT
                fromService:
                  name: shop-cache
                  type: keyvalue
                  property: hostport
          - type: keyvalue
            name: shop-cache
            plan: free
            maxmemoryPolicy: noeviction
            ipAllowList: []
        databases:
          - name: shop-db
            plan: free
            databaseName: shop
            user: shop_user
`;

describe.skipIf(!localOk)('a blueprint with datastores', () => {
  const t = useServer({ SLIPWAY_DATASTORE_CHECK_MS: '300' });

  it('creates the project, Postgres and key value, and wires them into the app', async () => {
    const { api } = t;
    const owner = await signUp(api);
    const body = await multipart({ name: 'shop' }, await packFixture('db-web', { 'render.yaml': YAML }));
    const created = await api.call('POST', '/v1/blueprints', { ...owner, ...body });
    expect(created.status).toBe(201);
    const bp = created.body.blueprint;
    const sync = await syncEnded(api, owner, bp.id, created.body.sync.id);
    expect(sync.error).toBeUndefined();
    const byKind = Object.fromEntries(sync.resources.map((r: any) => [r.kind, r]));
    expect(byKind.project).toMatchObject({ name: 'shop', id: expect.stringMatching(/^prj-/) });
    expect(byKind.postgres).toMatchObject({ name: 'shop-db', action: 'created', id: expect.stringMatching(/^dpg-/) });
    expect(byKind.keyValue).toMatchObject({
      name: 'shop-cache',
      action: 'created',
      id: expect.stringMatching(/^red-/),
    });

    const pgUrl = `/v1/postgres/${byKind.postgres.id}`;
    const kvUrl = `/v1/key-value/${byKind.keyValue.id}`;
    const pgRow = await untilStatus(api, owner, pgUrl, 'available');
    const kvRow = await untilStatus(api, owner, kvUrl, 'available');
    expect(pgRow).toMatchObject({ databaseName: 'shop', databaseUser: 'shop_user', blueprint: { id: bp.id } });
    expect(kvRow.blueprint).toEqual({ id: bp.id, name: 'shop' });
    const listed = await api.get('/v1/postgres', owner);
    expect(listed.body.map((i: any) => i.postgres.blueprint)).toEqual([{ id: bp.id, name: 'shop' }]);
    expect(kvRow.options.maxmemoryPolicy).toBe('noeviction');
    const envs = await api.get(`/v1/environments?projectId=${byKind.project.id}`, owner);
    const production = envs.body.find((i: any) => i.environment.name === 'production').environment;
    expect(pgRow.environmentId).toBe(production.id);
    // Render's postgresDetail names the project too.
    expect(pgRow.project).toMatchObject({ id: byKind.project.id, name: 'shop', owner: { id: owner.workspaceId } });
    expect(pgRow.project.environmentIds).toContain(production.id);

    const db = new pg.Client({
      connectionString: (await api.get(`${pgUrl}/connection-info`, owner)).body.externalConnectionString,
    });
    await db.connect();
    await db.query(
      `create table notes (id serial primary key, body text); insert into notes (body) values ('from a blueprint')`,
    );
    await db.end();
    const kv = new Redis((await api.get(`${kvUrl}/connection-info`, owner)).body.externalConnectionString, {
      maxRetriesPerRequest: 0,
    });
    await kv.set('greeting', 'cached by a blueprint');
    kv.disconnect();

    const settled = await allDeploysSettled(api, owner);
    expect(settled.map((d) => [d.status, d.failureReason])).toEqual([['live', undefined]]);
    const web = (await servicesByName(api, owner)).get('shop-web');
    expect(web.environmentId).toBe(production.id);
    const port = t.server.slipway.routerPort;
    expect((await viaRouter(port, web.slug, '/db')).text).toBe('from a blueprint');
    expect((await viaRouter(port, web.slug, '/kv')).text).toBe('cached by a blueprint');
    // The variables are references to the datastores, as the file says.
    const vars = await api.get(`/v1/services/${web.id}/env-vars`, owner);
    expect(vars.body.map((i: any) => i.envVar.fromDatabase?.id ?? i.envVar.fromKeyValue?.id).sort()).toEqual(
      [byKind.postgres.id, byKind.keyValue.id, byKind.keyValue.id].sort(),
    );
    const hostport = vars.body.find((i: any) => i.envVar.key === 'REDIS_HOSTPORT').envVar;
    const kvInfo = (await api.get(`${kvUrl}/connection-info`, owner)).body;
    expect(kvInfo.internalConnectionString).toContain(`@${hostport.value}`);

    // A database's name and user cannot change through the file.
    const renamed = await multipart(
      {},
      await packFixture('db-web', { 'render.yaml': YAML.replace('databaseName: shop', 'databaseName: other') }),
    );
    const up = await api.call('POST', `/v1/blueprints/${bp.id}/upload`, { ...owner, ...renamed });
    const second = await syncEnded(api, owner, bp.id, up.body.sync.id);
    const dbResult = second.resources.find((r: any) => r.kind === 'postgres');
    expect(dbResult).toMatchObject({ action: 'failed' });
    expect(dbResult.error).toMatch(/databaseName cannot change/);
    // The database stays as it is and stays wired: the web service deploys the new archive with it.
    expect(second.state).toBe('error');
    expect(second.resources.find((r: any) => r.name === 'shop-web')).toMatchObject({
      action: 'updated',
      deployId: expect.any(String),
    });
  });
  it('an archive uploaded while a sync runs is kept, and the sync that follows applies it', async () => {
    const { api } = t;
    const owner = await signUp(api);
    // The upload lands in the window the sync waits for its new database.
    const yaml = NOTES_YAML;
    const body = await multipart({ name: 'notes' }, await packFixture('db-web', { 'render.yaml': yaml }));
    const created = await api.call('POST', '/v1/blueprints', { ...owner, ...body });
    const bp = created.body.blueprint;
    await untilWaitingOnDatabase(api, owner, bp.id);
    const second = yaml.replace('    envVars:\n', '    envVars:\n      - key: SECOND\n        value: applied\n');
    const up = await api.call('POST', `/v1/blueprints/${bp.id}/upload`, {
      ...owner,
      ...(await multipart({}, await packFixture('db-web', { 'render.yaml': second }))),
    });
    expect(up.status).toBe(200);
    expect(up.body.sync).toBeUndefined(); // the first sync still runs
    await syncEnded(api, owner, bp.id, created.body.sync.id);
    const follow = await waitFor(
      'the follow-up sync',
      async () => {
        const syncs = (await api.get(`/v1/blueprints/${bp.id}/syncs`, owner)).body;
        return syncs.length === 2 && syncs[0].sync.state !== 'running' ? syncs[0].sync : undefined;
      },
      30_000,
    );
    expect(follow.state).toBe('success');
    const web = (await servicesByName(api, owner)).get('notes');
    const vars = (await api.get(`/v1/services/${web.id}/env-vars`, owner)).body.map((i: any) => i.envVar.key);
    expect(vars).toContain('SECOND');
  });
});
