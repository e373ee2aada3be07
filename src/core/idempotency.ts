import { conflict } from '../lib/errors.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { IdempotencyRepo } from '../store/repos/idempotency.js';

/** A reply as first sent, kept to be replayed. */
export interface KeptReply {
  statusCode: number;
  contentType?: string | number | string[];
  body: string;
}

/**
 * Replies kept per `Idempotency-Key` (http/plugins/idempotency.ts), sealed at rest: a reply may hold a secret
 * shown once. One key answers one request: the same key with another request is a 409.
 */
export function createIdempotencyStore(deps: { repo: IdempotencyRepo; box: SecretBox }) {
  const { repo, box } = deps;
  return {
    /**
     * Claims the key for this request: undefined when it is this request's to answer (then `complete` or
     * `release` it); the kept reply when the same request was answered already.
     */
    async claim(scope: string, key: string, requestHash: string): Promise<KeptReply | undefined> {
      const existing = await repo.claim(scope, key, requestHash);
      if (!existing) return undefined;
      if (existing.requestHash !== requestHash)
        throw conflict('this Idempotency-Key was used with a different request');
      if (existing.statusCode === null || existing.sealedReply === null)
        throw conflict('a request with this Idempotency-Key is still in progress');
      const { contentType, body } = JSON.parse(box.open(existing.sealedReply)) as Omit<KeptReply, 'statusCode'>;
      return { statusCode: existing.statusCode, contentType, body };
    },
    complete: (scope: string, key: string, reply: KeptReply) =>
      repo.complete(
        scope,
        key,
        reply.statusCode,
        box.seal(JSON.stringify({ contentType: reply.contentType, body: reply.body })),
      ),
    /** Frees the key (the reply failed and may succeed on retry). */
    release: (scope: string, key: string) => repo.release(scope, key),
  };
}
export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
