/**
 * The outbox: an event (and its webhook deliveries) commits in the same transaction as the state change it records,
 * so neither exists without the other. Postgres only (TEST_DATABASE_URL): a trigger makes the store refuse one event
 * type, as a crash between the two statements would lose it, and the change must not be there either.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, packFixture, upload } from './helpers/apps.js';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { bootServer, TEST_DATABASE_URL, type TestServer } from './helpers/server.js';

describe.skipIf(!TEST_DATABASE_URL)('webhooks: the outbox commits with the change', () => {
  let server: TestServer;
  let api: Client;
  let db: pg.Client;
  let owner: TestUser;
  const refuse = (type: string) =>
    db.query(`
      create or replace function refuse_event() returns trigger language plpgsql as $$
      begin
        if new.type = '${type}' then raise exception 'refused for the test'; end if;
        return new;
      end $$;
      drop trigger if exists refuse_event on events;
      create trigger refuse_event before insert on events for each row execute function refuse_event();`);

  beforeAll(async () => {
    server = await bootServer();
    api = client(server.url);
    db = new pg.Client({ connectionString: server.databaseUrl });
    await db.connect();
    owner = await signUp(api);
  }, 60_000);
  afterAll(async () => {
    await db.end();
    await server.close(); // its deployed app and namespace too
  });

  it('a suspend whose event cannot be stored does not suspend; a resume likewise', async () => {
    const { body } = await api.post(
      '/v1/services',
      { type: 'background_worker', name: 'outbox-a', ownerId: owner.workspaceId, serviceDetails: { runtime: 'node' } },
      owner,
    );
    const id = body.service.id;
    await refuse('service_suspended');
    expect((await api.post(`/v1/services/${id}/suspend`, undefined, owner)).status).toBe(500);
    expect((await api.get(`/v1/services/${id}`, owner)).body.suspended).toBe('not_suspended');
    await db.query('drop trigger refuse_event on events');
    expect((await api.post(`/v1/services/${id}/suspend`, undefined, owner)).status).toBe(202);
    await refuse('service_resumed');
    expect((await api.post(`/v1/services/${id}/resume`, undefined, owner)).status).toBe(500);
    expect((await api.get(`/v1/services/${id}`, owner)).body.suspended).toBe('suspended');
    await db.query('drop trigger refuse_event on events');
  });

  it('a deploy whose deploy_started cannot be stored does not exist; one that went live has its deploy_ended', async () => {
    const { body } = await api.post(
      '/v1/services',
      { type: 'web_service', name: 'outbox-b', ownerId: owner.workspaceId, serviceDetails: { runtime: 'node' } },
      owner,
    );
    const id = body.service.id;
    await refuse('deploy_started');
    expect((await upload(api, owner, id, await packFixture('node-web'))).status).toBe(500);
    expect((await api.get(`/v1/services/${id}/deploys`, owner)).body).toEqual([]);
    await db.query('drop trigger refuse_event on events');

    const uploaded = await upload(api, owner, id, await packFixture('node-web'));
    expect((await finished(api, owner, id, uploaded.body.deployId)).status).toBe('live');
    const { rows } = await db.query(
      `select type, details->>'status' as status from events where deploy_id = $1 order by created_at, id`,
      [uploaded.body.deployId],
    );
    expect(rows.map((r) => r.type)).toEqual(['deploy_started', 'build_started', 'build_ended', 'deploy_ended']);
    expect(rows.at(-1)).toMatchObject({ status: 'live' });
  });

  it('a datastore whose datastore_created cannot be stored does not exist', async () => {
    await refuse('datastore_created');
    expect((await api.post('/v1/postgres', { name: 'outbox-db', plan: 'free' }, owner)).status).toBe(500);
    expect((await api.get('/v1/postgres', owner)).body).toEqual([]);
    await db.query('drop trigger refuse_event on events');
  });
});
