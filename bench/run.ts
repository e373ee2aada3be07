/**
 * `npm run bench`: runs every bench/*.ts except this runner and the shared lib, one after
 * another (running them together would make them compete for the CPU they measure).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// start-timing.ts is measureNpmStart, which bench/builds.ts reports; blueprint-sync.ts is measureSync (bench/blueprints.ts);
// abuse-cases.ts, webhook-backlog.ts, abuse-git.ts and abuse-builds.ts are the abuse bench's cases; api-seed.ts fills
// bench/api.ts's lists.
const notBenches = new Set([
  'run.ts',
  'api-seed.ts',
  'lib.ts',
  'start-timing.ts',
  'blueprint-sync.ts',
  'webhook-backlog.ts',
  'abuse-cases.ts',
  'abuse-git.ts',
  'abuse-builds.ts',
]);
/** BENCH_ONLY=deploy,logs: those benches only (.ci/run's smoke run takes the ones every change is checked against). */
const only = process.env.BENCH_ONLY?.split(',').map((name) => `${name.trim()}.ts`);
const benches = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !notBenches.has(f))
  .filter((f) => !only || only.includes(f))
  .sort();
const unknown = only?.filter((f) => !benches.includes(f));
if (unknown?.length) {
  process.stderr.write(`BENCH_ONLY names no bench: ${unknown.join(', ')}\n`);
  process.exit(2);
}

const failed: string[] = [];
for (const file of benches) {
  process.stderr.write(`\n== bench/${file}\n`);
  const started = performance.now();
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(here, file)], {
    stdio: 'inherit',
    env: process.env,
  });
  if (result.status !== 0) failed.push(`${file} (${result.signal ?? `exit ${result.status}`})`);
  process.stderr.write(`== bench/${file}: ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
}

if (failed.length) {
  process.stderr.write(`\nbench failures: ${failed.join(', ')}\n`);
  process.exit(1);
}
