import { linearRegex } from '../lib/linear-regex.js';
import type { RouteRule, StaticRules } from '../model/static-rules.js';

/**
 * A path pattern as Render writes them: `*` matches anything (slashes included), `:name` one path segment, the rest
 * literally. Compiled to RE2 (lib/linear-regex.ts), whose time is linear in the path, so no pattern makes a request
 * expensive. Finding a match is cheap; the values cost more (an NFA step per character per live wildcard, several times
 * native RE2's: bench/regex.ts), so they are worked out only for a path that matches, and only the first `*` and the
 * first of each `:name` capture (the ones `fillDestination` reads); `**` is one `*`.
 */
export interface PathPattern {
  /** Whether `path` matches: all a header rule asks. */
  test(path: string): boolean;
  match(path: string): Map<string, string> | undefined;
}

const TOKEN = /\*|:[A-Za-z_][A-Za-z0-9_]*/g;
const escape = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function compilePattern(pattern: string): PathPattern {
  const names: string[] = [];
  let source = '^';
  let last = 0;
  let star = false; // the last token was a `*`, with nothing after it yet
  for (const m of pattern.matchAll(TOKEN)) {
    const literal = pattern.slice(last, m.index);
    last = m.index + m[0].length;
    if (star && m[0] === '*' && literal === '') continue; // `**` matches what `*` does
    star = m[0] === '*';
    source += escape(literal);
    const capture = names.includes(m[0]) ? '(?:' : '(';
    if (capture === '(') names.push(m[0]);
    source += `${capture}${m[0] === '*' ? '.*' : '[^/]+'})`;
  }
  source += `${escape(pattern.slice(last))}$`;
  const re = linearRegex(source, { dotAll: true });
  return {
    test: (path) => re.test(path),
    match(path) {
      const m = re.test(path) ? re.exec(path) : null;
      if (!m) return undefined;
      return new Map(names.map((name, i) => [name, m[i + 1] ?? '']));
    },
  };
}

/** The destination with the source's `*` and `:name` values put in (`:splat` is `*` too, as on Netlify and Render). */
export function fillDestination(destination: string, values: Map<string, string>): string {
  return destination.replace(TOKEN, (token) =>
    token === '*' || token === ':splat' ? (values.get('*') ?? '') : (values.get(token) ?? token),
  );
}

/**
 * Headers that frame the message or the connection: a site's rule setting them (`Content-Length: 0`,
 * `Transfer-Encoding`) would desynchronise the client's connection to the router. Only the router sets them.
 */
const FRAMING = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
  'host',
]);
/** A header name is an HTTP token, not a framing one; a value has no control characters (setHeader throws on them). */
export const isHeaderName = (name: string) =>
  /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/.test(name) && !FRAMING.has(name.toLowerCase());
export const isHeaderValue = (value: string) =>
  value.length <= 4096 && !/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value);

/** The rules compiled once per route-table entry: what the router runs per request. */
export interface CompiledRules {
  headersFor(path: string): Array<[string, string]>;
  /** The first route rule matching `path`, with its destination filled in. */
  route(path: string): { type: RouteRule['type']; destination: string } | undefined;
}

export function compileRules(rules: StaticRules): CompiledRules {
  const headers = rules.headers.map((h) => ({ ...h, pattern: compilePattern(h.path) }));
  const routes = rules.routes.map((r) => ({ ...r, pattern: compilePattern(r.source) }));
  return {
    headersFor: (path) => headers.filter((h) => h.pattern.test(path)).map((h) => [h.name, h.value]),
    route(path) {
      for (const r of routes) {
        const values = r.pattern.match(path);
        if (values) return { type: r.type, destination: fillDestination(r.destination, values) };
      }
      return undefined;
    },
  };
}
