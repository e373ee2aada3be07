import RE2 from 're2';

/** A static site's header rule (Render's `headers`): `name: value` on responses for paths matching `path`. */
export interface HeaderRule {
  path: string;
  name: string;
  value: string;
}
/** A static site's redirect or rewrite rule (Render's `routes`), applied in order when no file has the path. */
export interface RouteRule {
  type: 'redirect' | 'rewrite';
  source: string;
  destination: string;
}
export interface StaticRules {
  headers: HeaderRule[];
  routes: RouteRule[];
}

/**
 * A path pattern as Render writes them: `*` matches anything (slashes included), `:name` one path segment, the rest
 * literally. Compiled to RE2, whose time is linear in the path, so no pattern makes a request expensive.
 */
export interface PathPattern {
  match(path: string): Map<string, string> | undefined;
}

const TOKEN = /\*|:[A-Za-z_][A-Za-z0-9_]*/g;
const escape = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function compilePattern(pattern: string): PathPattern {
  const names: string[] = [];
  let source = '^';
  let last = 0;
  for (const m of pattern.matchAll(TOKEN)) {
    source += escape(pattern.slice(last, m.index));
    source += m[0] === '*' ? '(.*)' : '([^/]+)';
    names.push(m[0] === '*' ? '*' : m[0]);
    last = m.index + m[0].length;
  }
  source += `${escape(pattern.slice(last))}$`;
  const re = new RE2(source, 's');
  return {
    match(path) {
      const m = re.exec(path);
      if (!m) return undefined;
      const values = new Map<string, string>();
      names.forEach((name, i) => values.has(name) || values.set(name, m[i + 1] ?? ''));
      return values;
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
    headersFor: (path) => headers.filter((h) => h.pattern.match(path)).map((h) => [h.name, h.value]),
    route(path) {
      for (const r of routes) {
        const values = r.pattern.match(path);
        if (values) return { type: r.type, destination: fillDestination(r.destination, values) };
      }
      return undefined;
    },
  };
}
