import { RegExpParser, visitRegExpAST, type AST } from '@eslint-community/regexpp';
import { badRequest } from '../../lib/errors.js';
import { linearRegex, type LinearRegex } from '../../lib/linear-regex.js';

/**
 * The rules a log filter's `/regex/` and `*` wildcard values must follow. Patterns run only in memory, on RE2
 * (lib/linear-regex.ts: linear in the text it reads; no statement runs one: observability/logs/query.ts), for stored entries and the live tail
 * alike; the rules were made when Postgres ran them too, and are kept: they bound each pattern's size, so what a query
 * costs per byte it reads, and keep one reading of a pattern whatever Slipway version answered before:
 * - at most 256 characters, and a valid JavaScript regular expression in Unicode mode (no
 *   flags: the value is what stands between the slashes);
 * - no nested quantifiers: a repeated part (`*`, `+`, `?`, `{n,m}`) contains no quantifier
 *   itself (`(a+)+`, `(ab*)?`, `((x{2}){3})` are refused; `(ab)+`, `[a-z]+\d*` are fine);
 * - at most 256 characters and classes once repetitions are written out (`x{n,m}` counts as m
 *   copies of `x`, `x*` and `x+` as one): RE2's time per character grows with their number too;
 * - no backreferences (`\1`, `\k<name>`) and no lookarounds (`(?=`, `(?!`, `(?<=`, `(?<!`);
 * - groups nested at most 10 deep;
 * - at most 10 regular expressions in one query, and at most 10 `*` in one wildcard value.
 * A query's reading is also bounded in time and bytes (query.ts), so even the slowest accepted filter (about 0.3 MB/s
 * for `a.{100}b`, where RE2's DFA runs out of states; native RE2 too: bench/regex.ts) answers within its budget,
 * with `hasMore`.
 */
export const PATTERN_LIMITS = {
  length: 256,
  expanded: 256,
  depth: 10,
  regexes: 10,
  wildcards: 10,
  totalChars: 2048,
} as const;

const parser = new RegExpParser({ ecmaVersion: 2024 });

/** The first rule `source` breaks, or undefined when it may run. */
export function regexProblem(source: string): string | undefined {
  if (source.length > PATTERN_LIMITS.length)
    return `patterns are limited to ${PATTERN_LIMITS.length} characters (got ${source.length})`;
  let ast: AST.Pattern;
  try {
    ast = parser.parsePattern(source, 0, source.length, { unicode: true });
  } catch (err) {
    return `invalid regular expression: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`;
  }
  let problem: string | undefined;
  /** What JavaScript (the live tail) and Postgres read differently: named only when no cost rule is broken. */
  let dialect: string | undefined;
  const differs = (what: string) =>
    void (dialect ??= `${what} are not allowed: Postgres reads them differently from the live tail`);
  let quantifiers = 0;
  let depth = 0;
  const refuse = (rule: string) => void (problem ??= rule);
  const enterGroup = () =>
    ++depth > PATTERN_LIMITS.depth && refuse(`groups may be nested at most ${PATTERN_LIMITS.depth} deep`);
  visitRegExpAST(ast, {
    onQuantifierEnter() {
      if (quantifiers++ > 0)
        refuse('nested quantifiers are not allowed: a repeated part must not contain *, +, ? or {n,m} itself');
    },
    onQuantifierLeave: () => void quantifiers--,
    onBackreferenceEnter: () => refuse('backreferences (\\1, \\k<name>) are not allowed'),
    onAssertionEnter(a) {
      if (a.kind === 'lookahead' || a.kind === 'lookbehind')
        refuse('lookahead and lookbehind assertions are not allowed');
      if (a.kind === 'word') differs('\\b and \\B'); // a word boundary in JavaScript, a backspace in Postgres
    },
    onCharacterSetEnter(set) {
      if (set.kind === 'property') differs('\\p{…} property escapes');
    },
    onCharacterEnter(c) {
      if (c.raw.startsWith('\\u{')) differs('\\u{…} code point escapes');
    },
    onCharacterClassEnter(c) {
      if (c.elements.length === 0) differs('empty classes ([] and [^])');
    },
    onGroupEnter: enterGroup,
    onGroupLeave: () => void depth--,
    onCapturingGroupEnter(g) {
      if (g.name) differs('named groups');
      enterGroup();
    },
    onCapturingGroupLeave: () => void depth--,
  });
  const expanded = expandedSize(ast);
  if (expanded > PATTERN_LIMITS.expanded)
    refuse(
      `repetitions written out, the pattern would have ${expanded} characters and classes (at most ${PATTERN_LIMITS.expanded}; {n,m} counts m copies)`,
    );
  return problem ?? dialect;
}

/** Characters, classes and assertions, each `{n,m}` counted as m copies (n when unbounded). */
function expandedSize(node: AST.Node): number {
  switch (node.type) {
    case 'Pattern':
    case 'Group':
    case 'CapturingGroup':
    case 'Assertion':
      return 'alternatives' in node ? node.alternatives.reduce((n, a) => n + expandedSize(a), 0) : 1;
    case 'Alternative':
      return node.elements.reduce((n, e) => n + expandedSize(e), 0);
    case 'Quantifier':
      return expandedSize(node.element) * Math.max(1, node.max === Infinity ? node.min : node.max);
    default:
      return 1;
  }
}

/** The in-memory matcher, for stored entries and the live tail; `.` matches a newline, as in Postgres. */
function matcher(source: string, what: string): LinearRegex {
  try {
    return linearRegex(source, { dotAll: true });
  } catch (err) {
    throw badRequest(`${what}: ${(err as Error).message}`);
  }
}

/** A checked `/regex/` value: 400 naming the broken rule, else its in-memory matcher. */
export function compileRegex(name: string, value: string, source: string): LinearRegex {
  const problem = regexProblem(source);
  if (problem) throw badRequest(`${name}: ${JSON.stringify(value)} is refused: ${problem}`);
  return matcher(source, `${name}: ${JSON.stringify(value)} is not supported`);
}

const escapeRegex = (v: string) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A `*` wildcard value's in-memory matcher (anchored unless `substring`). */
export function compileWildcard(name: string, value: string, substring: boolean): LinearRegex {
  const parts = value.split('*');
  if (parts.length - 1 > PATTERN_LIMITS.wildcards)
    throw badRequest(
      `${name}: ${JSON.stringify(value)} is refused: at most ${PATTERN_LIMITS.wildcards} * wildcards per value`,
    );
  const body = parts.map(escapeRegex).join('.*');
  return matcher(substring ? body : `^${body}$`, `${name}: ${JSON.stringify(value)}`);
}
