import type { FastifyInstance } from 'fastify';
import { AppError } from '../../lib/errors.js';
import { isStorableText } from '../../lib/text.js';

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

function refusal(part: Part, value: unknown): AppError | undefined {
  const at = unstorableAt(value);
  if (at === undefined) return undefined;
  return new AppError('validation_failed', `invalid ${part}`, [
    { field: at.slice(0, 200) || part, message: 'must not contain NUL (\\u0000) or unpaired surrogate characters' },
  ]);
}

/** In JSON text, a NUL or a surrogate can only be written as a \u escape (raw ones are invalid or decode to U+FFFD). */
const ESCAPED_UNSTORABLE = /\\u(0000|[dD][89a-fA-F])/;

/**
 * A NUL or a lone surrogate anywhere in the path, query or JSON body is refused with a 400
 * before validation: Postgres cannot store a NUL (a lookup by such an id would fail as a 500),
 * an env var holding one would reach the app cut short, and a lone surrogate has no UTF-8 form.
 */
/** A verified signed body (see the JSON parser below), parsed and checked as every other JSON body is. */
export function signedBody(text: string): unknown {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new AppError('validation_failed', 'the body is not valid JSON');
  }
  const refused = ESCAPED_UNSTORABLE.test(text) ? refusal('body', body) : undefined;
  if (refused) throw refused;
  return body;
}

export function registerTextInputCheck(app: FastifyInstance) {
  // Bodies are checked as they are parsed, and walked only when their text has such an escape:
  // walking every body would cost ten times its parse.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, text, done) => {
    // A signed body (a public webhook) is not parsed before its signature holds: an anonymous sender could make
    // every request parse megabytes. Its handler parses it with signedBody() once verified.
    if (request.routeOptions.config?.rawBody) {
      request.rawBody = text as string;
      return done(null, {});
    }
    void parseJson(request, text as string, (err, body) => {
      if (err || !ESCAPED_UNSTORABLE.test(text as string)) return done(err, body);
      const refused = refusal('body', body);
      return refused ? done(refused) : done(null, body);
    });
  });
  // An HTML form's body, only where a route takes one (an OAuth provider's form_post callback): elsewhere a form
  // is a 415, as it was before, so no cross-site form reaches a JSON route.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, text, done) => {
    if (!request.routeOptions.config?.formBody)
      return done(new AppError('unsupported_media_type', 'send the body as application/json'), undefined);
    const body = Object.fromEntries(new URLSearchParams(text as string));
    return done(refusal('body', body) ?? null, body);
  });
  app.addHook('preValidation', async (request) => {
    const refused = refusal('params', request.params) ?? refusal('querystring', request.query);
    if (refused) throw refused;
  });
}
