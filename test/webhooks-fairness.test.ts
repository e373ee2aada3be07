/**
 * Fair deliveries: one workspace's webhooks to a receiver that never answers, and a backlog of test pings to it, must
 * not hold back another workspace's delivery (issue 29, "Fair queues"). Both workspaces share one server, as tenants
 * do; the receivers are real HTTP servers on loopback.
 */
import { describe, expect, it } from 'vitest';
import { signUp, type TestUser } from './helpers/client.js';
import { useServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';
import { useReceivers } from './helpers/webhook-receiver.js';

const TIMEOUT_MS = 8000;
const t = useServer({
  SLIPWAY_WEBHOOK_ALLOW_PRIVATE: '1',
  // Long enough that a victim waiting for a hanging send to time out is plainly over 2 s, short enough for teardown.
  SLIPWAY_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
});
const receiver = useReceivers();

const createHook = async (user: TestUser, name: string, url: string) => {
  const res = await t.api.post('/v1/webhooks', { name, url, eventFilter: ['webhook_test'] }, user);
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};

describe('webhooks: fair between workspaces', () => {
  it("delivers a workspace's event within 2 s while another's hanging webhooks hold a backlog of 60 test pings", async () => {
    const hanging = await receiver(() => undefined); // never answers; closed after the file
    const healthy = await receiver();
    const attacker = await signUp(t.api);
    const victim = await signUp(t.api);
    // Enough webhooks that, at the per-webhook limit, they could take every send slot of the process.
    const hooks: string[] = [];
    for (let i = 0; i < 8; i++) hooks.push(await createHook(attacker, `dead-${i}`, hanging.url));
    const victimHook = await createHook(victim, 'alive', healthy.url);

    // Quiet: the victim's ping arrives at once.
    const quietStart = Date.now();
    await t.api.post(`/v1/webhooks/${victimHook}/test`, undefined, victim);
    await waitFor('the quiet ping', async () => healthy.received.length === 1, 5000, 10);
    const quietMs = Date.now() - quietStart;

    for (let i = 0; i < 60; i++) {
      const res = await t.api.post(`/v1/webhooks/${hooks[i % hooks.length]}/test`, undefined, attacker);
      expect(res.status).toBe(202);
    }
    // The attacker's sends are in flight (hanging) before the victim's event is queued.
    await waitFor('the hanging sends', async () => hanging.received.length >= 8, 5000, 10);
    await new Promise((r) => setTimeout(r, 300));

    const start = Date.now();
    const res = await t.api.post(`/v1/webhooks/${victimHook}/test`, undefined, victim);
    expect(res.status).toBe(202);
    await waitFor('the ping under the backlog', async () => healthy.received.length === 2, TIMEOUT_MS * 3, 10);
    const busyMs = Date.now() - start;
    console.log(`victim delivery: quiet ${quietMs} ms, under the backlog ${busyMs} ms`);
    expect(healthy.received[1]!.json).toMatchObject({ type: 'webhook_test' });
    expect(busyMs).toBeLessThan(2000);
  }, 60_000);

  it('keeps the 5 newest test pings of a webhook pending: older ones queued behind them are dropped', async () => {
    const owner = await signUp(t.api);
    const later = await receiver();
    const res = await t.api.post(
      '/v1/webhooks',
      { name: 'paused', url: later.url, enabled: false, eventFilter: ['webhook_test'] },
      owner,
    );
    const hook = res.body.id as string;
    const sent: string[] = [];
    for (let i = 0; i < 8; i++) {
      const ping = await t.api.post(`/v1/webhooks/${hook}/test`, undefined, owner);
      expect(ping.status).toBe(202);
      sent.push(ping.body.eventId);
    }
    const { rows } = await t.server.slipway.store.executeSql(
      `select event_id from webhook_deliveries where webhook_id = $1 and status = 'pending' order by id`,
      [hook],
    );
    expect(rows.map((r) => r.event_id)).toEqual(sent.slice(3));
    expect((await t.api.patch(`/v1/webhooks/${hook}`, { enabled: true }, owner)).status).toBe(200);
    await waitFor('the kept pings', async () => later.received.length === 5, 10_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(later.received.map((r) => r.headers['webhook-id']).sort()).toEqual(sent.slice(3).sort());
  });
});
