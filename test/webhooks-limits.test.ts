import { describe, expect, it } from 'vitest';
import { signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { useServer } from './helpers/server.js';
import { useReceivers } from './helpers/webhook-receiver.js';

const t = useServer({
  SLIPWAY_WEBHOOK_ALLOW_PRIVATE: '1',
  SLIPWAY_WEBHOOK_RETRY_BASE_MS: '100',
  SLIPWAY_WEBHOOK_DISABLE_AFTER_MS: '2000',
  SLIPWAY_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
  SLIPWAY_WEBHOOK_POLL_MS: '50',
  SLIPWAY_WEBHOOKS_PER_WORKSPACE: '3',
});
const receiver = useReceivers();
const log = async (user: Parameters<typeof t.api.get>[1], id: string) =>
  (await t.api.get(`/v1/webhooks/${id}/events?limit=100`, user)).body.map((e: any) => e.webhookEvent);

describe('webhooks: limits', () => {
  it("refuses a workspace's webhook past the per-workspace limit with 409, and counts no other workspace's", async () => {
    const [a, b] = [await signUp(t.api), await signUp(t.api)];
    const create = (user: typeof a, n: number) =>
      t.api.post(
        '/v1/webhooks',
        {
          ownerId: user.workspaceId,
          name: `hook-${n}`,
          url: 'http://127.0.0.1:9/hook',
          enabled: false,
          eventFilter: [],
        },
        user,
      );
    for (let n = 0; n < 3; n++) expect((await create(a, n)).status).toBe(201);
    const refused = await create(a, 3);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/SLIPWAY_WEBHOOKS_PER_WORKSPACE/);
    expect((await t.api.get(`/v1/webhooks?ownerId=${a.workspaceId}`, a)).body).toHaveLength(3);
    expect((await create(b, 0)).status).toBe(201);
    // Room again once one is deleted.
    const first = (await t.api.get(`/v1/webhooks?ownerId=${a.workspaceId}`, a)).body[0].webhook.id;
    expect((await t.api.delete(`/v1/webhooks/${first}`, a)).status).toBe(204);
    expect((await create(a, 4)).status).toBe(201);
  });

  it('disables a webhook that keeps failing, with an event and an audit entry', async () => {
    const owner = await signUp(t.api);
    const failing = await receiver((_, res) => {
      res.statusCode = 503;
      res.end('down');
    });
    const watcher = await receiver();
    const hook = (await t.api.post('/v1/webhooks', { name: 'failing', url: failing.url }, owner)).body;
    await t.api.post('/v1/webhooks', { name: 'watcher', url: watcher.url, eventFilter: ['webhook_disabled'] }, owner);
    await t.api.post(`/v1/webhooks/${hook.id}/test`, undefined, owner);
    await waitFor(
      'the webhook disabled',
      async () => !(await t.api.get(`/v1/webhooks/${hook.id}`, owner)).body.enabled,
      15_000,
    );
    await waitFor('the webhook_disabled event', async () => watcher.received.length === 1);
    expect(watcher.received[0]!.json).toMatchObject({
      type: 'webhook_disabled',
      data: { webhookId: hook.id, name: 'failing', reason: 'sustained delivery failures' },
    });
    const audit = (await t.api.get('/v1/audit-logs?limit=50', owner)).body.map((e: any) => e.auditLog);
    expect(audit.find((e: any) => e.event === 'UpdateWebhookEvent' && e.actor?.type === 'system')).toBeDefined();
    // Disabled: no more attempts.
    const attempts = failing.received.length;
    await new Promise((r) => setTimeout(r, 1000));
    expect(failing.received.length).toBe(attempts);
  });

  it('keeps at most the per-webhook limit of deliveries in flight, and caps the logged response body', async () => {
    const owner = await signUp(t.api);
    let open = 0;
    let most = 0;
    const slow = await receiver((_, res) => {
      open++;
      most = Math.max(most, open);
      setTimeout(() => {
        open--;
        res.end('x'.repeat(1024 * 1024));
      }, 200);
    });
    const hook = (await t.api.post('/v1/webhooks', { name: 'slow', url: slow.url }, owner)).body;
    for (let i = 0; i < 6; i++) await t.api.post(`/v1/webhooks/${hook.id}/test`, undefined, owner);
    await waitFor('six deliveries', async () => (await log(owner, hook.id)).length === 6, 15_000);
    expect(most).toBe(2);
    const [first] = await log(owner, hook.id);
    expect(first.statusCode).toBe(200);
    expect(first.responseBody).toHaveLength(4096);
  });
});
