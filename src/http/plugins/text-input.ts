import type { FastifyInstance } from 'fastify';
import { isStorableText } from '../../lib/text.js';
import { sendError } from './errors.js';

type Part = 'params' | 'querystring' | 'body';

/** The path (`a.b.0`) of the first string or key in `value` that Postgres text cannot hold. */
function unstorableAt(value: unknown): string | undefined {
  // Iterative: a body may nest deeper than the call stack.
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (!isStorableText(v)) return path;
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    // Plain objects only (their prototype is Object.prototype, null, or a null-prototype object as
    // the query parser's): not an upload stream or a Buffer.
    const proto = Object.getPrototypeOf(v);
    if (!Array.isArray(v) && proto !== null && Object.getPrototypeOf(proto) !== null) continue;
    for (const [key, child] of Object.entries(v)) {
      const at = path ? `${path}.${key}` : key;
      if (!isStorableText(key)) return at;
      stack.push([child, at]);
    }
  }
  return undefined;
}

/**
 * A NUL or a lone surrogate anywhere in the path, query or JSON body is refused with a 400
 * before validation: Postgres cannot store either (a lookup by such an id would fail as a 500),
 * and an env var holding a NUL would reach the app cut short.
 */
export function registerTextInputCheck(app: FastifyInstance) {
  app.addHook('preValidation', async (request, reply) => {
    const parts: Array<[Part, unknown]> = [['params', request.params], ['querystring', request.query], ['body', request.body]];
    for (const [part, value] of parts) {
      const at = unstorableAt(value);
      if (at === undefined) continue;
      return sendError(request, reply, 'validation_failed', `invalid ${part}`, [
        { field: at || part, message: 'must not contain NUL (\\u0000) or unpaired surrogate characters' },
      ]);
    }
  });
}
