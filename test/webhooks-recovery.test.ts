import { describe, expect, it } from 'vitest';
import { signUp } from './helpers/client.js';
import { waitFor, within } from './helpers/process.js';
import { useRestartableSlipway } from './helpers/restartable.js';
import { TEST_DATABASE_URL } from './helpers/server.js';
import { startReceiver } from './helpers/webhook-receiver.js';

describe('webhooks: kill -9', () => {
  const { start } = useRestartableSlipway({
    SLIPWAY_WEBHOOK_ALLOW_PRIVATE: '1',
    // A long timeout, so a long lease (timeout + 5 s): the in-flight delivery's lease outlives the restart.
    SLIPWAY_WEBHOOK_TIMEOUT_MS: '10000',
    SLIPWAY_WEBHOOK_RETRY_BASE_MS: '200',
    SLIPWAY_WEBHOOK_POLL_MS: '50',
  });

  it('a delivery under way when Slipway is killed is sent after the restart, with the same webhook-id', async () => {
    // The first request hangs, and Slipway is killed while it is in flight; later ones are answered.
    const r = await startReceiver((_, res, i) => {
      if (i > 0) res.end('ok');
    });
    try {
      const a = await start();
      const owner = await signUp(a.api);
      const hook = (
        await a.api.post('/v1/webhooks', { name: 'durable', url: r.url, eventFilter: ['service_created'] }, owner)
      ).body;
      // Two events: one in flight when the process dies, one likely still waiting in the outbox.
      const ping = await a.api.post(`/v1/webhooks/${hook.id}/test`, undefined, owner);
      expect(ping.status).toBe(202);
      const created = await a.api.post(
        '/v1/services',
        { type: 'web_service', name: 'after-kill', serviceDetails: { runtime: 'node' } },
        owner,
      );
      expect(created.status).toBe(201);
      await waitFor('the first delivery to be in flight', async () => r.received.length > 0);
      a.proc.child.kill('SIGKILL');
      await within(a.proc.exited, 15_000, 'exit after SIGKILL');
      const inFlight = r.received[0]!.headers['webhook-id'];
      const beforeRestart = r.received.length;

      const b = await start();
      const upAt = Date.now();
      // Answered: every request but the first. Both events are, the one killed in flight again after the restart.
      await waitFor(
        'both events answered, the in-flight one after the restart',
        async () => {
          const answered = new Set(r.received.slice(1).map((x) => x.json.type));
          const resent = r.received.slice(beforeRestart).some((x) => x.headers['webhook-id'] === inFlight);
          return resent && answered.has('webhook_test') && answered.has('service_created');
        },
        25_000,
      );
      // PGlite: one process owns the store, so the dead one's lease is handed back at start and the delivery is resent
      // at once, not when its 15 s lease runs out. (Postgres may be shared by live processes: their leases stand.)
      if (!TEST_DATABASE_URL) expect(Date.now() - upAt).toBeLessThan(5000);
      // The attempt is logged once the receiver's answer is back: a moment after the receiver saw the request.
      const answeredIds = async () =>
        (await b.api.get(`/v1/webhooks/${hook.id}/events`, owner)).body
          .map((e: any) => e.webhookEvent)
          .filter((e: any) => e.statusCode === 200)
          .map((e: any) => e.eventId as string)
          .sort();
      const receivedIds = [...new Set(r.received.map((x) => x.headers['webhook-id'] as string))].sort();
      await waitFor('both answers logged', async () => (await answeredIds()).length >= receivedIds.length, 10_000);
      expect(await answeredIds()).toEqual(receivedIds);
      b.proc.child.kill('SIGTERM');
      await within(b.proc.exited, 15_000, 'exit after SIGTERM');
    } finally {
      await r.close();
    }
  }, 90_000);
});
