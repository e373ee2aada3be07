import { RE2JS, RE2JSException, RE2JSSyntaxException } from 're2js';

/**
 * Regular expressions whose time is linear in the text they read, whatever the pattern: what runs patterns that
 * tenants write (log filters, a static site's redirect rules, a repository's build filter), where JavaScript's
 * backtracking RegExp could be made to take exponential time. The one place that names the engine: re2js, a pure
 * JavaScript port of RE2 (Go's regexp), so `npm install` compiles nothing (the native `re2` it replaced built from
 * C++ for minutes wherever its prebuilt binary could not be downloaded; bench/regex.ts compares them).
 *
 * Patterns are written in JavaScript's syntax (`\uXXXX`, `\cX`, `(?<name>…)`, `\/`), translated to RE2's as the
 * native `re2` package did; RE2's own rules apply beyond that: no backreferences or lookarounds, `\s` and `\w` are
 * ASCII, repetition counts at most 1000. Matching is by code point, as JavaScript's `u` flag.
 */
export interface LinearRegex {
  /** Whether the pattern matches anywhere in `input` (no captures: the fastest path). */
  test(input: string): boolean;
  /** The first match and its groups (undefined for a group that took no part), or null: as RegExp's `exec`. */
  exec(input: string): Array<string | undefined> | null;
}

/** A pattern RE2 cannot run; the message says why (`invalid escape sequence: \b`), without the engine's name. */
export class RegexSyntaxError extends Error {}

/** `dotAll`: `.` matches a newline too (JavaScript's `s` flag). */
export function linearRegex(source: string, options: { dotAll?: boolean } = {}): LinearRegex {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(source), options.dotAll ? RE2JS.DOTALL : 0);
  } catch (err) {
    if (!(err instanceof RE2JSException)) throw err;
    if (!(err instanceof RE2JSSyntaxException)) throw new RegexSyntaxError(err.message); // too large to compile
    // The part of the pattern at fault, as the engine quotes it (with the `(?s)` it puts in front for `dotAll`).
    const at = err.getPattern()?.replace(/^\(\?s\)/, '');
    throw new RegexSyntaxError(at ? `${err.getDescription()}: ${at}` : err.getDescription());
  }
  return {
    test: (input) => compiled.test(input),
    exec: (input) => compiled.exec(input),
  };
}
