/** The log filter pattern rules (observability/logs/patterns.ts) and the in-memory matcher's linear time. */
import { describe, expect, it } from 'vitest';
import { parseLogFilter } from '../src/observability/logs/filters.js';
import { regexProblem } from '../src/observability/logs/patterns.js';
import { logRow } from './helpers/log-row.js';

describe('regexProblem', () => {
  it.each([
    ['((x{1,40}){1,40}){1,40}y', /nested quantifiers/],
    ['(a+)+b', /nested quantifiers/],
    ['(ab?)*', /nested quantifiers/],
    ['(\\d{2}:)*', /nested quantifiers/],
    ['x'.repeat(257), /limited to 256 characters/],
    ['(a)\\1', /backreferences/],
    ['(?<n>a)\\k<n>', /backreferences/],
    ['(?=a)b', /lookahead and lookbehind/],
    ['(?<!a)b', /lookahead and lookbehind/],
    ['x{1000}', /repetitions written out/],
    ['[a-z]{100}[a-z]{100}[a-z]{100}', /repetitions written out/],
    ['x{300,}', /repetitions written out/],
    ['((((((((((((a))))))))))))', /nested at most 10 deep/],
    ['(', /invalid regular expression/],
    ['[[:alpha:]]', /invalid regular expression/],
    ['\\berror\\b', /\\b and \\B are not allowed: Postgres reads them differently/],
    ['\\p{L}+', /property escapes are not allowed/],
    ['\\u{1F600}', /code point escapes are not allowed/],
    ['[^]', /empty classes/],
    ['(?<word>x)', /named groups are not allowed/],
  ])('refuses %s', (source, rule) => {
    expect(regexProblem(source)).toMatch(rule);
  });

  it.each([
    'error|warn',
    '^GET \\/api',
    'timeout after \\d+ms',
    '(GET|POST) \\/v1\\/[a-z]+',
    '^5\\d\\d$',
    '[a-f0-9]{32}',
    '\\d*\\d*x',
    '(ab)+c',
    '.*',
  ])('accepts %s', (source) => expect(regexProblem(source)).toBeUndefined());
});

describe('parseLogFilter', () => {
  it('matches in memory as the rules say, with 400s naming the rule', () => {
    const { matches } = parseLogFilter('tea-a', { text: ['/error|warn/'] });
    expect([matches(logRow('an error here')), matches(logRow('warn: slow')), matches(logRow('info: fine'))]).toEqual([
      true,
      true,
      false,
    ]);
    expect(parseLogFilter('tea-a', { path: ['/api/*'] }).matches(logRow('x', { path: '/api/v1' }))).toBe(true);
    expect(parseLogFilter('tea-a', { path: ['/api/*'] }).matches(logRow('x', { path: '/v1/api/' }))).toBe(false);
    expect(parseLogFilter('tea-a', { text: ['a*c'] }).matches(logRow('xxabcxx'))).toBe(true);
    expect(parseLogFilter('tea-a', { statusCode: ['5*'] }).matches(logRow('x', { statusCode: 503 }))).toBe(true);
    expect(() => parseLogFilter('tea-a', { text: ['/(a+)+/'] })).toThrow(
      /text: "\/\(a\+\)\+\/" is refused: nested quantifiers/,
    );
    expect(() => parseLogFilter('tea-a', { text: ['*a*b*c*d*e*f*g*h*i*j*k*'] })).toThrow(/at most 10 \* wildcards/);
    expect(() => parseLogFilter('tea-a', { text: Array.from({ length: 11 }, (_, i) => `/a${i}/`) })).toThrow(
      /at most 10 \/regex\/ values/,
    );
  });

  it("matches plain substrings literally, and bounds the total size of a query's values", () => {
    const { matches, narrows } = parseLogFilter('tea-a', { text: ['50%_done'] });
    expect(narrows).toBe(true);
    expect(parseLogFilter('tea-a', { resource: ['srv-a'] }).narrows).toBe(false);
    expect([matches(logRow('at 50%_done now')), matches(logRow('at 50x done'))]).toEqual([true, false]);
    const many = Array.from({ length: 5 }, (_, i) => `${i}`.padEnd(500, 'x'));
    expect(() => parseLogFilter('tea-a', { text: many })).toThrow(/total at most 2048 characters \(got 2500\)/);
    expect(() => parseLogFilter('tea-a', { text: many.slice(0, 4) })).not.toThrow();
  });

  it("reads JavaScript's escapes as JavaScript does, and refuses with RE2's reason what it cannot run", () => {
    const matches = (pattern: string, message: string) =>
      parseLogFilter('tea-a', { text: [`/${pattern}/`] }).matches(logRow(message));
    expect(matches('\\u0041\\x42\\/', 'xAB/y')).toBe(true);
    expect(matches('a\\cJb', 'a\nb')).toBe(true);
    expect(matches('a.b', 'a\nb')).toBe(true); // `.` matches a newline, as in Postgres
    expect(matches('^.$', '\u{1F600}')).toBe(true); // one code point, as with JavaScript's u flag
    expect(() => parseLogFilter('tea-a', { text: ['/[\\b]/'] })).toThrow(
      'text: "/[\\\\b]/" is not supported: invalid escape sequence: \\b', // the value as JSON, so \\ twice
    );
  });

  it('runs an accepted pattern in linear time (a backtracking engine takes seconds on this)', () => {
    const { matches } = parseLogFilter('tea-a', { text: ['/\\d*\\d*x/', '*1*x'] });
    const started = performance.now();
    expect(matches(logRow('1'.repeat(3000)))).toBe(false);
    expect(performance.now() - started).toBeLessThan(250);
  });
});
