/**
 * bench/regex.ts: the linear-time regex engine (src/lib/linear-regex.ts: re2js, pure JavaScript) on the work it does.
 * 1. The log search's filter: each typical `/regex/` value compiled as a query compiles it (observability/logs/
 *    patterns.ts) and run on the messages of ROWS log lines, against V8's RegExp on the same lines in the same run
 *    (ms per 100k lines, and the ratio). V8 backtracks, so it is the baseline only for these safe patterns.
 * 2. The accepted filters hardest for RE2, over lines of 1.5 KB: the issue-29 query (8 values of 62 `(x*)` groups),
 *    `a.{100}b` (too many DFA states: the engine falls back to its NFA) and ten long values, ORed as a query runs
 *    them, at N and 2N lines: MB/s, and the time's ratio (2 when linear).
 * 3. The engine alone on `(a+)+$`, the textbook catastrophic pattern (log filters refuse it before it gets there),
 *    at 10k to 1M characters, and V8 on 24 characters of it; a static site's route values (captures), on a short
 *    path and on a 16 KB one with a 10-wildcard pattern.
 * BENCH_REGEX_NATIVE=<the native re2 package's dir> runs native re2 too, where it is installed (it is not a dependency
 * any more: it compiled from C++ for minutes at `npm install`); docs/testing.md has its figures, measured that way.
 * BENCH_SMOKE=1: fewer lines.
 */
import path from 'node:path';
import { compileRegex } from '../src/observability/logs/patterns.js';
import { linearRegex } from '../src/lib/linear-regex.js';
import { compileRules } from '../src/router/static-rules.js';
import type { LogRow } from '../src/store/repos/logs.js';
import { logRow } from '../test/helpers/log-row.js';
import { log, median, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const ROWS = SMOKE ? 20_000 : 200_000;
const LONG_ROWS = SMOKE ? 200 : 1_000;
const ROUNDS = SMOKE ? 3 : 7;

type Tester = { test(s: string): boolean };
/** Native re2, when BENCH_REGEX_NATIVE points at an installed copy. */
const NativeRE2: (new (source: string, flags: string) => Tester) | undefined = process.env.BENCH_REGEX_NATIVE
  ? ((await import(path.resolve(process.env.BENCH_REGEX_NATIVE, 're2.js'))) as { default: never }).default
  : undefined;

const row = (i: number, message: string) =>
  logRow(message, {
    id: i,
    tsUs: i,
    workspaceId: 'tea-bench',
    resourceId: `srv-bench${i % 10}`,
    level: i % 7 ? 'info' : 'error',
  });
/** App and request lines of the usual mix and length (70–110 characters). */
const typicalRows = Array.from({ length: ROWS }, (_, i) =>
  row(
    i,
    i % 3
      ? `GET /api/items/${i} ${i % 50 ? 200 : 503} ${i % 97}ms user=${i % 13} ${i % 7 ? 'ok' : 'error: timeout from upstream'}`
      : `worker ${i % 8} processed job ${i.toString(16)} in ${i % 1000} ms (queue depth ${i % 31})`,
  ),
);
const TYPICAL = [
  'error',
  'timeout|refused',
  '^GET /api/items/\\d+ 5\\d\\d',
  'user=1[0-2] .*upstream$',
  'job [0-9a-f]{4} in',
];

/** Median ms of `rounds` runs of `work` (after one warm-up run). */
function timed(work: () => unknown, rounds = ROUNDS): number {
  work();
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    work();
    samples.push(performance.now() - start);
  }
  return median(samples);
}
const countMatches = (rows: LogRow[], matches: (row: LogRow) => boolean) => rows.filter(matches).length;
const per100k = (ms: number, rows: number) => Number(((ms * 100_000) / rows).toFixed(2));

function typical() {
  return TYPICAL.map((source) => {
    const linear = compileRegex('text', `/${source}/`, source);
    const v8 = new RegExp(source, 'su');
    const native = NativeRE2 && new NativeRE2(source, 'su');
    const counts = [linear, v8, ...(native ? [native] : [])].map((re) =>
      countMatches(typicalRows, (r) => re.test(r.message)),
    );
    if (new Set(counts).size !== 1) throw new Error(`${source}: the engines disagree (${counts.join(' / ')})`);
    const run = (re: Tester) => () =>
      countMatches(typicalRows, (r) => r.workspaceId === 'tea-bench' && re.test(r.message));
    const linearMs = per100k(timed(run(linear)), ROWS);
    const v8Ms = per100k(timed(run(v8)), ROWS);
    const nativeMs = native ? per100k(timed(run(native)), ROWS) : undefined;
    return { source, matched: counts[0]!, linearMs, v8Ms, nativeMs, ratio: Number((linearMs / v8Ms).toFixed(2)) };
  });
}

/** A seeded stream of pseudo-random numbers in [0, 1): the same lines every run. */
function seeded(seed: number) {
  let state = seed;
  return () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}
const randomText = (random: () => number, alphabet: string, length: number) =>
  Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
/**
 * Each with lines of 1.5 KB that make it read them through: the issue's as test/log-query-budget.test.ts stores them
 * (every 1,000th ends in y); `a.{100}b` on random a and c with the only b first (so no match, and states without end);
 * the ten values on random letters, whose runs of x never reach 20.
 */
const HARDEST: Array<{ name: string; text: string[]; line: (i: number, random: () => number) => string }> = [
  {
    name: '8 values of 62 (x*) groups, then a letter',
    text: [...'yzwvutsr'].map((c) => `/${'(x*)'.repeat(62)}${c}/`),
    line: (i) => `${i} ${'x'.repeat(1500)}${i % 1000 ? '' : 'y'}`,
  },
  {
    name: 'a.{100}b (DFA states run out)',
    text: ['/a.{100}b/'],
    line: (_, random) => `b${randomText(random, 'ac', 1500)}`,
  },
  {
    name: '10 values x{20}[a-w]{0,200}',
    text: Array.from({ length: 10 }, (_, i) => `/x{20}[a-${'mnopqrstuvw'[i]}]{0,200}/`),
    line: (_, random) => randomText(random, 'abcdefghijklmnopqrstuvwxyz', 1500),
  },
];

/** One run where it takes seconds; the median of 20 where a run is too short for the timer (under 50 ms). */
function measure(work: () => unknown): number {
  const once = timed(work, 1);
  return once < 50 ? timed(work, 20) : once;
}

function hardest() {
  const mb = (rows: LogRow[]) => rows.reduce((n, r) => n + r.message.length, 0) / 1e6;
  return HARDEST.map(({ name, text, line }) => {
    const random = seeded(42);
    const twice = Array.from({ length: LONG_ROWS * 2 }, (_, i) => row(i, line(i, random)));
    const once = twice.slice(0, LONG_ROWS);
    // As a query runs them (filters.ts): every value compiled as a query compiles it, ORed.
    const filter = (res: Tester[]) => (r: LogRow) => res.some((re) => re.test(r.message));
    const linear = filter(text.map((value) => compileRegex('text', value, value.slice(1, -1))));
    const ms = measure(() => countMatches(once, linear));
    const ms2 = measure(() => countMatches(twice, linear));
    const native = NativeRE2 && filter(text.map((value) => new NativeRE2(value.slice(1, -1), 'su')));
    return {
      name,
      ms: Number(ms.toFixed(1)),
      mbPerSecond: Number((mb(once) / (ms / 1000)).toFixed(2)),
      doubled: Number((ms2 / ms).toFixed(2)),
      nativeMs: native ? Number(measure(() => countMatches(once, native)).toFixed(1)) : undefined,
    };
  });
}

function engineAlone() {
  const nested = linearRegex('(a+)+$');
  const native = NativeRE2 && new NativeRE2('(a+)+$', 'u');
  const lengths = SMOKE ? [10_000, 100_000] : [10_000, 100_000, 1_000_000];
  const backtracking = timed(() => /(a+)+$/u.test(`${'a'.repeat(24)}b`), 1);
  const rules = compileRules({
    headers: [],
    routes: [
      { type: 'rewrite', source: '/blog/:year/*', destination: '/posts/:year/:splat' },
      { type: 'rewrite', source: `/${'*a'.repeat(10)}`, destination: '/:splat' },
    ],
  });
  const short = '/blog/2024/05/a-post-about-regular-expressions.html';
  const long = `/${'a'.repeat(16_000)}`;
  return {
    nestedMs: lengths.map((n) => {
      const text = `${'a'.repeat(n)}b`;
      return {
        chars: n,
        linear: Number(timed(() => nested.test(text), 3).toFixed(3)),
        native: native ? Number(timed(() => native.test(text), 3).toFixed(3)) : undefined,
      };
    }),
    v8At24Ms: Number(backtracking.toFixed(1)),
    routeShortUs: Number((timed(() => rules.route(short), 1000) * 1000).toFixed(2)),
    routeLongMs: Number(timed(() => rules.route(long), 3).toFixed(1)),
  };
}

const typicalResults = typical();
const hardestResults = hardest();
const engine = engineAlone();
log(
  table(
    ['measure', 'value', 'baseline / note'],
    [
      ...typicalResults.map((r) => [
        `/${r.source}/ over ${ROWS} lines: ms per 100k lines, linear / V8 (${r.matched} matched)`,
        `${r.linearMs} / ${r.v8Ms} (ratio ${r.ratio})`,
        r.nativeMs === undefined ? '' : `native re2 ${r.nativeMs}`,
      ]),
      ...hardestResults.map((r) => [
        `${r.name}: ${LONG_ROWS} lines of 1.5 KB`,
        `${r.ms} ms, ${r.mbPerSecond} MB/s`,
        `2x the lines: x${r.doubled}${r.nativeMs === undefined ? '' : `; native re2 ${r.nativeMs} ms`}`,
      ]),
      ...engine.nestedMs.map((r) => [
        `(a+)+$ on ${r.chars} a's and a b (ms)`,
        r.linear,
        r.native === undefined ? '' : `native re2 ${r.native}`,
      ]),
      ['  V8 RegExp on 24 of them (ms)', engine.v8At24Ms, 'doubles with each a'],
      ['static route values, short path (µs)', engine.routeShortUs, '/blog/:year/*'],
      ['static route values, 16 KB path (ms)', engine.routeLongMs, `/${'*a'.repeat(3)}… (10 *)`],
    ],
  ),
);
console.log(
  JSON.stringify({
    bench: 'regex',
    smoke: SMOKE,
    native: Boolean(NativeRE2),
    typical: typicalResults,
    hardest: hardestResults,
    engine,
  }),
);
