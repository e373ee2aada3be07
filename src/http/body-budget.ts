import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../lib/errors.js';

/**
 * A bound on the bytes of unverified request bodies held at once, all requests to a route together
 * (docs/github-and-sign-in.md, "GitHub pushes"): each request reserves its Content-Length (or the route's body limit,
 * without one) before its body is read, and gives it back when its response is done or its connection goes. Past the bound: 503 with Retry-After,
 * before a byte of the body is read. Without it, eight unsigned 25 MB bodies sent at once took 215 MB.
 */
export function bodyBudget(limitBytes: number, retryAfterSeconds = 5) {
  let held = 0;
  return {
    reserve(request: FastifyRequest, reply: FastifyReply) {
      const declared = Number(request.headers['content-length']);
      const bytes = Number.isSafeInteger(declared) && declared >= 0 ? declared : (request.routeOptions.bodyLimit ?? 0);
      if (held + bytes > limitBytes) {
        const err = new AppError('unavailable', 'too many webhook bodies are being received at once; retry shortly');
        err.retryAfterSeconds = retryAfterSeconds;
        throw err;
      }
      held += bytes;
      reply.raw.once('close', () => (held -= bytes));
    },
    held: () => held,
  };
}
