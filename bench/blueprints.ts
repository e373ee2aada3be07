/**
 * Blueprints, three measures:
 * - validation: every real render.yaml in test/fixtures/blueprints, validated many times in process, against parsing
 *   the same file with the `yaml` package alone (the baseline, in the same run). Target: p99 per file at most 50 ms;
 * - a 10-service blueprint with no build step: sync -> all live, against the same 10 services created and deployed
 *   through the API one by one (the baseline, in the same run, on the same Slipway);
 * - a no-op re-sync (the file unchanged): start -> end, target at most 300 ms.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { validateBlueprint } from '../src/core/blueprints/validate.js';
import { log, percentile, repoRoot, table } from './lib.js';
import { measureSync } from './blueprint-sync.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const ROUNDS = SMOKE ? 20 : 200;
const dir = path.join(repoRoot, 'test/fixtures/blueprints');
const texts = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => readFileSync(path.join(dir, f), 'utf8'));

function time(work: (text: string) => unknown): number[] {
  const ms: number[] = [];
  for (let round = 0; round < ROUNDS; round++)
    for (const text of texts) {
      const start = performance.now();
      work(text);
      ms.push(performance.now() - start);
    }
  return ms;
}

log(`validating ${texts.length} files ${ROUNDS} times`);
time((text) => validateBlueprint(text)); // warm-up: JIT
const parse = time((text) => parseDocument(text, { lineCounter: new LineCounter() }));
const validate = time((text) => validateBlueprint(text));
const p = (values: number[], q: number) => Number(percentile(values, q).toFixed(3));
const ratio = Number((p(validate, 50) / p(parse, 50)).toFixed(2));
console.log(
  table(
    ['measure', 'p50 ms', 'p99 ms', 'target'],
    [
      ['parse only (yaml, baseline)', p(parse, 50), p(parse, 99), ''],
      ['validate (parse, check, plan)', p(validate, 50), p(validate, 99), 'p99 <= 50'],
      ['validate / parse (p50)', ratio, '', ''],
    ],
  ),
);
const sync = await measureSync(SMOKE ? 1 : 3);
console.log(
  table(
    ['measure', 'value', 'target'],
    [
      ['10 services through the API, one by one -> all live (ms, median)', sync.apiMs, ''],
      ['10 services by a blueprint sync -> all live (ms, median)', sync.blueprintMs, ''],
      ['  of which the sync itself (create -> sync ended, ms)', sync.syncEndedMs, ''],
      ['blueprint / API', sync.ratio, ''],
      ['no-op re-sync p50 / max (ms)', `${sync.noopMs.p50} / ${sync.noopMs.max}`, '<= 300'],
    ],
  ),
);
console.log(
  JSON.stringify({
    bench: 'blueprints',
    smoke: SMOKE,
    files: texts.length,
    rounds: ROUNDS,
    parseMs: { p50: p(parse, 50), p99: p(parse, 99) },
    validateMs: { p50: p(validate, 50), p99: p(validate, 99) },
    ratio,
    p99Met: p(validate, 99) <= 50,
    sync,
  }),
);
