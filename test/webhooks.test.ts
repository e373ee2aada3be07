import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { addMember, signUp, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';
import { useReceivers } from './helpers/webhook-receiver.js';

const t = useServer({
  SLIPWAY_WEBHOOK_ALLOW_PRIVATE: '1',
  SLIPWAY_WEBHOOK_RETRY_BASE_MS: '150',
  SLIPWAY_WEBHOOK_TIMEOUT_MS: '1000',
  SLIPWAY_WEBHOOK_POLL_MS: '50',
});
const receiver = useReceivers();

const createHook = async (user: TestUser, url: string, extra: Record<string, unknown> = {}) => {
  const res = await t.api.post('/v1/webhooks', { name: 'hook', url, enabled: true, eventFilter: [], ...extra }, user);
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; secret: string; url: string; eventFilter: string[] };
};
const createService = async (user: TestUser, name: string) => {
  const res = await t.api.post(
    '/v1/services',
    { type: 'web_service', name, serviceDetails: { runtime: 'node' } },
    user,
  );
  expect(res.status, res.text).toBe(201);
  return res.body.service as { id: string; name: string };
};
const attempts = async (user: TestUser, id: string) =>
  (await t.api.get(`/v1/webhooks/${id}/events`, user)).body.map((e: any) => e.webhookEvent);

describe('webhooks: the API', () => {
  it('creates, lists, reads, updates, rotates and deletes; the secret is whsec_ and sealed at rest', async () => {
    const owner = await signUp(t.api);
    const hook = await createHook(owner, 'https://example.com/hook', { enabled: false, eventFilter: ['deploy_ended'] });
    expect(hook).toMatchObject({ id: expect.stringMatching(/^whk-/), name: 'hook', enabled: false });
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const list = await t.api.get('/v1/webhooks', owner);
    expect(list.body).toEqual([{ cursor: expect.any(String), webhook: hook }]);
    expect((await t.api.get(`/v1/webhooks/${hook.id}`, owner)).body).toEqual(hook);
    const patched = await t.api.patch(`/v1/webhooks/${hook.id}`, { name: 'renamed', eventFilter: [] }, owner);
    expect(patched.body).toMatchObject({ name: 'renamed', eventFilter: [], secret: hook.secret });
    const rotated = await t.api.post(`/v1/webhooks/${hook.id}/rotate-secret`, undefined, owner);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(hook.secret);
    const { rows } = await t.server.slipway.store.executeSql('select sealed_secret from webhooks where id = $1', [
      hook.id,
    ]);
    expect(rows[0].sealed_secret).not.toContain(rotated.body.secret.slice(6));
    const audit = await t.api.get('/v1/audit-logs?limit=20', owner);
    expect(audit.text).toContain('CreateWebhookEvent');
    expect(audit.text).toContain('RotateWebhookSecretEvent');
    expect((await t.api.delete(`/v1/webhooks/${hook.id}`, owner)).status).toBe(204);
    expect((await t.api.get(`/v1/webhooks/${hook.id}`, owner)).status).toBe(404);
  });

  it('answers bad input with 400 in the error shape', async () => {
    const owner = await signUp(t.api);
    const malformed = await t.api.call('POST', '/v1/webhooks', {
      ...owner,
      raw: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({
      id: expect.any(String),
      code: expect.any(String),
      message: expect.any(String),
    });
    const bad = async (body: Record<string, unknown>) => {
      const res = await t.api.post('/v1/webhooks', { name: 'x', url: 'https://example.com/', ...body }, owner);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toMatch(/^(validation_failed|bad_request)$/);
    };
    await bad({ enabled: 'yes' });
    await bad({ url: 42 });
    await bad({ url: 'not a url' });
    await bad({ url: 'ftp://example.com/' });
    await bad({ url: 'https://user:pass@example.com/' });
    await bad({ eventFilter: ['no_such_event'] });
    await bad({ name: '' });
  });

  it('is for admins and owners only; another workspace answers 404', async () => {
    const owner = await signUp(t.api);
    const hook = await createHook(owner, 'https://example.com/hook', { enabled: false });
    const admin = await addMember(t.api, owner, 'admin');
    expect((await t.api.get(`/v1/webhooks/${hook.id}`, admin)).status).toBe(200);
    const developer = await addMember(t.api, owner, 'developer');
    expect((await t.api.get(`/v1/webhooks/${hook.id}`, developer)).status).toBe(403);
    expect((await t.api.get(`/v1/webhooks?ownerId=${owner.workspaceId}`, developer)).status).toBe(403);
    expect(
      (
        await t.api.post(
          '/v1/webhooks',
          { ownerId: owner.workspaceId, name: 'x', url: 'https://example.com/' },
          developer,
        )
      ).status,
    ).toBe(403);
    const stranger = await signUp(t.api);
    for (const res of [
      await t.api.get(`/v1/webhooks/${hook.id}`, stranger),
      await t.api.patch(`/v1/webhooks/${hook.id}`, { name: 'mine' }, stranger),
      await t.api.delete(`/v1/webhooks/${hook.id}`, stranger),
      await t.api.get(`/v1/webhooks/${hook.id}/events`, stranger),
      await t.api.post(`/v1/webhooks/${hook.id}/test`, undefined, stranger),
      await t.api.post(`/v1/webhooks/${hook.id}/rotate-secret`, undefined, stranger),
    ])
      expect(res.status).toBe(404);
    expect((await t.api.get('/v1/webhooks', stranger)).body).toEqual([]);
  });
});

describe('webhooks: deliveries', () => {
  it("delivers the workspace's events signed (standardwebhooks verifies), in Render's payload, filtered", async () => {
    const owner = await signUp(t.api);
    const all = await receiver();
    const suspendedOnly = await receiver();
    // Slipway's own types (service_created) go to the webhooks that name them; one without a filter gets Render's only.
    const hook = await createHook(owner, all.url, { eventFilter: ['service_created', 'service_suspended'] });
    await createHook(owner, suspendedOnly.url, { eventFilter: ['service_suspended'] });
    const renderOnly = await receiver();
    await createHook(owner, renderOnly.url);
    const other = await signUp(t.api);
    const otherReceiver = await receiver();
    await createHook(other, otherReceiver.url, { eventFilter: ['service_created'] });

    const service = await createService(owner, 'hooked');
    await createService(other, 'not-yours');
    expect((await t.api.post(`/v1/services/${service.id}/suspend`, undefined, owner)).status).toBeLessThan(300);
    await waitFor('the events', async () => all.ofType('service_suspended').length === 1);
    await waitFor('the filtered event', async () => suspendedOnly.received.length === 1);
    await waitFor("the other workspace's event", async () => otherReceiver.received.length === 1);
    await waitFor('the unfiltered webhook', async () => renderOnly.received.length === 1);
    expect(renderOnly.received.map((r) => r.json.type)).toEqual(['service_suspended']);

    const created = all.ofType('service_created')[0]!;
    expect(created.json).toEqual({
      type: 'service_created',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: {
        id: expect.stringMatching(/^evt-/),
        serviceId: service.id,
        serviceName: 'hooked',
        name: 'hooked',
        type: 'web_service',
      },
    });
    expect(created.headers['webhook-id']).toBe(created.json.data.id);
    expect(new Webhook(hook.secret).verify(created.body, created.headers)).toEqual(created.json);
    expect(suspendedOnly.received.map((r) => r.json.type)).toEqual(['service_suspended']);
    // Isolation: nothing of the other workspace reaches this one's webhooks, and the reverse.
    expect(all.received.map((r) => r.json.data.serviceId)).toEqual([service.id, service.id]);
    expect(otherReceiver.received.map((r) => r.json.data.serviceName)).toEqual(['not-yours']);

    // The receiver answers before the dispatcher logs the attempt: wait for the log, as for the retries below.
    await waitFor('the log', async () => (await attempts(owner, hook.id)).length === 2);
    const log = await attempts(owner, hook.id);
    expect(log).toHaveLength(2);
    expect(log[0]).toMatchObject({ eventType: 'service_suspended', statusCode: 200, responseBody: 'ok' });
  });

  it('retries a failing receiver with backoff until it answers 2xx; the log shows each attempt', async () => {
    const owner = await signUp(t.api);
    const flaky = await receiver((_, res, i) => {
      res.statusCode = i < 2 ? 500 : 204;
      res.end(i < 2 ? 'broken' : '');
    });
    const hook = await createHook(owner, flaky.url);
    expect((await t.api.post(`/v1/webhooks/${hook.id}/test`, undefined, owner)).status).toBe(202);
    await waitFor('three attempts', async () => flaky.received.length >= 3);
    expect(new Set(flaky.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(flaky.received[0]!.json.type).toBe('webhook_test');
    await waitFor('the log', async () => (await attempts(owner, hook.id)).length === 3);
    const log = await attempts(owner, hook.id);
    expect(log.map((a: any) => a.statusCode)).toEqual([204, 500, 500]);
    expect(log[2].responseBody).toBe('broken');
  });

  it('gives up on a receiver that hangs after the timeout, and logs why', async () => {
    const owner = await signUp(t.api);
    const hanging = await receiver(() => undefined);
    const hook = await createHook(owner, hanging.url);
    await t.api.post(`/v1/webhooks/${hook.id}/test`, undefined, owner);
    const [first] = await waitFor('a timed-out attempt', async () => {
      const log = await attempts(owner, hook.id);
      return log.length ? log : undefined;
    });
    expect(first).toMatchObject({ error: expect.stringMatching(/timed out/) });
    expect(first.statusCode).toBeUndefined();
    expect(first.durationMs).toBeGreaterThanOrEqual(900);
    await t.api.delete(`/v1/webhooks/${hook.id}`, owner);
  });

  it('does not follow a redirect (to a private address or anywhere)', async () => {
    const owner = await signUp(t.api);
    const target = await receiver();
    const redirecting = await receiver((_, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${target.port}/metadata` });
      res.end();
    });
    const hook = await createHook(owner, redirecting.url);
    await t.api.post(`/v1/webhooks/${hook.id}/test`, undefined, owner);
    await waitFor('the attempt', async () => (await attempts(owner, hook.id)).length > 0);
    expect((await attempts(owner, hook.id))[0].statusCode).toBe(302);
    expect(target.received).toEqual([]);
    await t.api.delete(`/v1/webhooks/${hook.id}`, owner);
  });

  it('signs with the old and the new secret after a rotation', async () => {
    const owner = await signUp(t.api);
    const r = await receiver();
    const hook = await createHook(owner, r.url);
    const rotated = (await t.api.post(`/v1/webhooks/${hook.id}/rotate-secret`, undefined, owner)).body;
    await t.api.post(`/v1/webhooks/${hook.id}/test`, undefined, owner);
    await waitFor('the ping', async () => r.received.length === 1);
    const [ping] = r.received;
    expect(ping!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(rotated.secret).verify(ping!.body, ping!.headers)).toMatchObject({ type: 'webhook_test' });
    expect(new Webhook(hook.secret).verify(ping!.body, ping!.headers)).toMatchObject({ type: 'webhook_test' });
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(24).toString('base64')}`).verify(ping!.body, ping!.headers),
    ).toThrow();
  });
});
