/**
 * The CLI (docs/cli.md): `slipway deploy` of a 50 MB directory (incompressible files beside the cli-app fixture), from
 * the command to live, against curl uploading the same directory's tarball (made beforehand, not timed) and the
 * deploy going live; alternated round by round on one Slipway and one service. Target ≤ 1.2×, though the CLI's time
 * also packs the directory. And the CLI's start-up: `slipway services ls --json` from exec to exit (target ≤ 300 ms),
 * beside `node -e ''` in the same run. BENCH_SMOKE=1: fewer rounds.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { log, median, repoRoot, signUp, startSlipway, table, waitLive } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const ROUNDS = SMOKE ? 1 : 4;
const STARTS = SMOKE ? 5 : 20;
const MB = 1024 * 1024;
const CLI = path.join(repoRoot, 'cli/bin/slipway.js');

const timed = (run: () => void) => {
  const start = performance.now();
  run();
  return performance.now() - start;
};

async function main() {
  execFileSync(path.join(repoRoot, 'node_modules/.bin/tsc'), ['-p', path.join(repoRoot, 'cli/tsconfig.json')]);
  const slipway = await startSlipway();
  const work = mkdtempSync(path.join(tmpdir(), 'slipway-bench-cli-'));
  try {
    const { call } = await signUp(slipway.url);
    const { token } = await call('POST', '/v1/api-keys', { name: 'bench' });
    const env = { ...process.env, SLIPWAY_URL: slipway.url, SLIPWAY_API_KEY: token, NO_COLOR: '1' };
    const dir = path.join(work, 'bench-cli-app');
    cpSync(path.join(repoRoot, 'test/fixtures/apps/cli-app'), dir, { recursive: true });
    mkdirSync(path.join(dir, 'assets'));
    for (let i = 0; i < 5; i++) writeFileSync(path.join(dir, 'assets', `blob-${i}.bin`), randomBytes(10 * MB));
    const cli = (args: string[]) => {
      const result = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
      if (result.status !== 0) throw new Error(`slipway ${args.join(' ')}: ${result.status} ${result.stderr}`);
      return result.stdout;
    };
    cli(['deploy', dir]); // creates the service (and warms the build cache)
    const service = JSON.parse(cli(['services', 'show', 'bench-cli-app', '--json'])) as { id: string };

    const viaCli: number[] = [];
    const viaCurl: number[] = [];
    let tarballBytes = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // A change each time: an unchanged archive would be the same source.
      writeFileSync(path.join(dir, 'VERSION'), `curl-${round}`);
      const tarball = path.join(work, 'source.tgz');
      execFileSync('tar', ['-czf', tarball, '--exclude=.slipway', '-C', dir, '.']);
      tarballBytes = statSync(tarball).size;
      let start = performance.now();
      const upload = JSON.parse(
        execFileSync(
          'curl',
          [
            '-sS',
            '--fail-with-body',
            '-H',
            `Authorization: Bearer ${token}`,
            '-H',
            'content-type: application/gzip',
            '--data-binary',
            `@${tarball}`,
            `${slipway.url}/v1/services/${service.id}/source/upload`,
          ],
          { encoding: 'utf8', maxBuffer: 16 * MB },
        ),
      ) as { deployId: string };
      await waitLive(call, service.id, upload.deployId, 100); // the CLI polls every 500 ms; 100 favours curl
      viaCurl.push(performance.now() - start);

      writeFileSync(path.join(dir, 'VERSION'), `cli-${round}`);
      start = performance.now();
      cli(['deploy', dir]);
      viaCli.push(performance.now() - start);
      log(`round ${round + 1}: curl ${viaCurl.at(-1)!.toFixed(0)} ms, slipway deploy ${viaCli.at(-1)!.toFixed(0)} ms`);
    }

    const starts: number[] = [];
    const nodeStarts: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      nodeStarts.push(timed(() => execFileSync(process.execPath, ['-e', ''])));
      starts.push(timed(() => cli(['services', 'ls', '--json'])));
    }
    const results = {
      directoryMB: Math.round(tarballBytes / MB),
      curlToLiveMs: Math.round(median(viaCurl)),
      cliToLiveMs: Math.round(median(viaCli)),
      deployRatio: Number((median(viaCli) / median(viaCurl)).toFixed(3)),
      servicesLsMs: Math.round(median(starts)),
      nodeStartMs: Math.round(median(nodeStarts)),
    };
    log(
      table(
        ['measure', 'median', 'target'],
        [
          [`curl upload of the ${results.directoryMB} MB tarball -> live (ms)`, results.curlToLiveMs, ''],
          ['slipway deploy of the directory -> live (ms)', results.cliToLiveMs, ''],
          ['slipway deploy / curl', results.deployRatio, '<= 1.2'],
          ['slipway services ls --json, exec to exit (ms)', results.servicesLsMs, '<= 300'],
          ["node -e '' (ms)", results.nodeStartMs, ''],
        ],
      ),
    );
    console.log(JSON.stringify({ bench: 'cli', smoke: SMOKE, rounds: ROUNDS, ...results }));
    if (results.deployRatio > 1.2 || results.servicesLsMs > 300) process.exitCode = 1;
  } finally {
    await slipway.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
