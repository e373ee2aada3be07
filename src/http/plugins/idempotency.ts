import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IdempotencyStore } from '../../core/idempotency.js';
import { badRequest } from '../../lib/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    idempotency?: { scope: string; key: string };
  }
}

function scopeOf(request: FastifyRequest): string | undefined {
  const p = request.principal;
  if (!p) return undefined; // public routes (login, register) are not replayed: their replies carry cookies
  return p.kind === 'operator' ? 'operator' : `user:${p.user.id}`;
}

/**
 * `Idempotency-Key` on POST: the first reply is kept (core/idempotency.ts) and replayed for 24 h;
 * the same key with another request is a 409.
 */
export function registerIdempotency(app: FastifyInstance, store: IdempotencyStore) {
  app.addHook('preHandler', async (request, reply) => {
    const key = request.headers['idempotency-key'];
    const scope = scopeOf(request);
    if (request.method !== 'POST' || key === undefined || !scope) return;
    if (typeof key !== 'string' || key.length < 1 || key.length > 255)
      throw badRequest('Idempotency-Key must be 1 to 255 characters');
    const requestHash = createHash('sha256')
      .update(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`)
      .digest('hex');
    const kept = await store.claim(scope, key, requestHash);
    if (!kept) {
      request.idempotency = { scope, key };
      return;
    }
    reply.code(kept.statusCode).header('Idempotent-Replayed', 'true');
    if (kept.contentType) reply.type(kept.contentType as string);
    return reply.send(kept.body);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const claimed = request.idempotency;
    if (!claimed) return payload;
    request.idempotency = undefined;
    // A server error may succeed on retry: free the key rather than replaying the failure.
    if (reply.statusCode >= 500 || (typeof payload !== 'string' && payload !== null && payload !== undefined)) {
      await store.release(claimed.scope, claimed.key);
    } else {
      const contentType = reply.getHeader('content-type');
      await store.complete(claimed.scope, claimed.key, {
        statusCode: reply.statusCode,
        contentType,
        body: payload ?? '',
      });
    }
    return payload;
  });
}
