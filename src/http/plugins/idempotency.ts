import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest, conflict } from '../../lib/errors.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { IdempotencyRepo } from '../../store/repos/idempotency.js';

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
 * `Idempotency-Key` on POST: the first reply is kept (sealed: it may hold a secret shown
 * once) and replayed for 24 h; the same key with another request is a 409.
 */
export function registerIdempotency(app: FastifyInstance, deps: { repo: IdempotencyRepo; box: SecretBox }) {
  app.addHook('preHandler', async (request, reply) => {
    const key = request.headers['idempotency-key'];
    const scope = scopeOf(request);
    if (request.method !== 'POST' || key === undefined || !scope) return;
    if (typeof key !== 'string' || key.length < 1 || key.length > 255)
      throw badRequest('Idempotency-Key must be 1 to 255 characters');
    const requestHash = createHash('sha256')
      .update(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`)
      .digest('hex');
    const existing = await deps.repo.claim(scope, key, requestHash);
    if (!existing) {
      request.idempotency = { scope, key };
      return;
    }
    if (existing.requestHash !== requestHash) throw conflict('this Idempotency-Key was used with a different request');
    if (existing.statusCode === null || existing.sealedReply === null)
      throw conflict('a request with this Idempotency-Key is still in progress');
    const { contentType, body } = JSON.parse(deps.box.open(existing.sealedReply)) as {
      contentType?: string;
      body: string;
    };
    reply.code(existing.statusCode).header('Idempotent-Replayed', 'true');
    if (contentType) reply.type(contentType);
    return reply.send(body);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const claimed = request.idempotency;
    if (!claimed) return payload;
    request.idempotency = undefined;
    // A server error may succeed on retry: free the key rather than replaying the failure.
    if (reply.statusCode >= 500 || (typeof payload !== 'string' && payload !== null && payload !== undefined)) {
      await deps.repo.release(claimed.scope, claimed.key);
    } else {
      const contentType = reply.getHeader('content-type');
      const sealed = deps.box.seal(JSON.stringify({ contentType, body: payload ?? '' }));
      await deps.repo.complete(claimed.scope, claimed.key, reply.statusCode, sealed);
    }
    return payload;
  });
}
