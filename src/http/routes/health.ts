import { Type } from '@sinclair/typebox';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { Timestamp } from '../schemas/common.js';

const Component = Type.Object({ status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]), latencyMs: Type.Number(), error: Type.Optional(Type.String()) });

async function probe(check: () => Promise<void>) {
  const started = performance.now();
  try {
    await check();
    return { status: 'ok' as const, latencyMs: Math.round(performance.now() - started) };
  } catch (err) {
    return { status: 'unavailable' as const, latencyMs: Math.round(performance.now() - started), error: (err as Error).message };
  }
}

export function healthRoutes({ health }: HttpDeps) {
  const components = async () => {
    const store = await probe(health.store);
    // The queue lives in the store: when the store is down, so is the queue.
    const queue = store.status === 'ok' ? await probe(health.queue) : { ...store, error: 'the state store is unavailable' };
    return { store, queue };
  };
  return [
    defineRoute({
      method: 'GET', url: '/api/health', summary: 'Health of the state store and job queue (503 when unavailable)', tags: ['Health'],
      access: 'public',
      schema: {
        response: {
          200: Type.Object({ status: Type.String(), storeKind: Type.String(), store: Component, queue: Component }),
          503: Type.Object({ status: Type.String(), storeKind: Type.String(), store: Component, queue: Component }),
        },
      },
      handler: async (_req, reply) => {
        const { store, queue } = await components();
        const ok = store.status === 'ok' && queue.status === 'ok';
        return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', storeKind: health.storeKind, store, queue });
      },
    }),
    defineRoute({
      method: 'GET', url: '/status', summary: 'Public status of Slipway\'s components', tags: ['Health'],
      access: 'public',
      schema: {
        response: {
          200: Type.Object({
            status: Type.Union([Type.Literal('operational'), Type.Literal('degraded')]),
            components: Type.Array(Type.Object({ name: Type.String(), status: Type.Union([Type.Literal('operational'), Type.Literal('down')]) })),
            updatedAt: Timestamp,
          }),
        },
      },
      handler: async () => {
        const { store, queue } = await components();
        const list = [
          { name: 'api', status: 'operational' as const },
          { name: 'store', status: store.status === 'ok' ? ('operational' as const) : ('down' as const) },
          { name: 'queue', status: queue.status === 'ok' ? ('operational' as const) : ('down' as const) },
        ];
        return { status: list.every((c) => c.status === 'operational') ? 'operational' : 'degraded', components: list, updatedAt: new Date().toISOString() };
      },
    }),
  ];
}
