/**
 * The webhook backlog of issue 29 as a bench case: one workspace's webhooks to a receiver that never answers, with a
 * burst of test pings, and another workspace's delivery latency meanwhile. Slipway must run with
 * SLIPWAY_WEBHOOK_ALLOW_PRIVATE=1 (the receivers are on loopback).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { signUp } from './lib.js';

/** A receiver on loopback: `hang` never answers; otherwise 200, and `arrived(id)` resolves on that webhook-id. */
async function startReceiver(hang: boolean) {
  const waiting = new Map<string, () => void>();
  const seen = new Set<string>(); // arrived before anyone waited
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (hang) return;
      res.end('ok');
      const id = String(req.headers['webhook-id']);
      seen.add(id);
      waiting.get(id)?.();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    arrived: (id: string) => new Promise<void>((resolve) => (seen.has(id) ? resolve() : waiting.set(id, resolve))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The attacker: `hooks` webhooks in a new workspace to a receiver that never answers, then `pings` test pings. */
export async function startWebhookBacklog(url: string, opts: { hooks?: number; pings?: number } = {}) {
  const { hooks = 8, pings = 60 } = opts;
  const receiver = await startReceiver(true);
  const { call } = await signUp(url);
  const ids: string[] = [];
  for (let i = 0; i < hooks; i++)
    ids.push((await call('POST', '/v1/webhooks', { name: `dead-${i}`, url: receiver.url })).id);
  for (let i = 0; i < pings; i++) await call('POST', `/v1/webhooks/${ids[i % ids.length]}/test`);
  /** Closes the receiver (the hanging sends end at once) and deletes the webhooks: their retries would go on into the next case. */
  return {
    stop: async () => {
      await receiver.close();
      for (const id of ids) await call('DELETE', `/v1/webhooks/${id}`);
    },
  };
}

/** The victim: a workspace with one webhook to a live receiver; `measure()` is one test ping's ms to arrival. */
export async function webhookVictim(url: string) {
  const receiver = await startReceiver(false);
  const { call } = await signUp(url);
  const { id } = await call('POST', '/v1/webhooks', { name: 'victim', url: receiver.url });
  return {
    async measure(): Promise<number> {
      const started = performance.now();
      const { eventId } = await call('POST', `/v1/webhooks/${id}/test`);
      await receiver.arrived(eventId);
      return performance.now() - started;
    },
    stop: () => receiver.close(),
  };
}
