/**
 * Backups of a local Postgres datastore (issue 33), each against a baseline in the same run: a pgbench database
 * (scale BENCH_PGBENCH_SCALE, 70 ≈ 1 GiB; smoke 5) in a paid datastore, which archives its WAL with pgBackRest, and
 * the same database in a server started by hand from the same binaries with archiving off.
 * - write throughput: pgbench TPS on the datastore (archiving on) against the bare server (off), rounds interleaved;
 * - base backup: pgBackRest's full backup with the datastore's own config (what Slipway's daily backup runs) against
 *   pg_basebackup of the bare server;
 * - export: POST …/export to done against pg_dump -Fc of the bare server;
 * - point-in-time recovery: POST …/recovery to the new datastore available.
 * On the shared network, so that no namespace's port forwarding is measured with the writes. BENCH_BACKUP_S3=1: the
 * repositories in a bucket of s3rver over TLS on loopback (SLIPWAY_BACKUP_S3_*), not the backup dir.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { findPostgresInstalls } from '../src/provisioners/postgres/binaries.js';
import { findPgbackrest } from '../src/provisioners/postgres/backups.js';
import { startS3 } from '../test/helpers/s3.js';
import { freePort, log, signUp, sleep, startSlipway, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const SCALE = Number(process.env.BENCH_PGBENCH_SCALE || (SMOKE ? 5 : 70));
const TPS_SECONDS = SMOKE ? 5 : 20;
const ROUNDS = SMOKE ? 1 : 2;
const ON_S3 = process.env.BENCH_BACKUP_S3 === '1';
const execFileAsync = promisify(execFile);
const asNobody = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--'] : [];

/**
 * Runs a program to its end; never spawnSync: a bench process whose event loop stood still for a base backup's time
 * misses that Slipway closed its idle keep-alive connection, and its next request fails on it.
 */
async function runChecked(cmd: string[]): Promise<string> {
  const [file, ...args] = cmd;
  try {
    return (await execFileAsync(file!, args, { encoding: 'utf8', maxBuffer: 64 << 20 })).stdout;
  } catch (err) {
    throw new Error(`${cmd.join(' ')}: ${(err as { stderr?: string }).stderr?.slice(-2000) ?? (err as Error).message}`);
  }
}
const timed = async (fn: () => Promise<unknown>) => {
  const started = performance.now();
  await fn();
  return performance.now() - started;
};
/** pgbench's TPS for `seconds` against `url` (4 clients, 2 threads). */
async function tps(bin: string, url: string, seconds: number): Promise<number> {
  const out = await runChecked([path.join(bin, 'pgbench'), '-c', '4', '-j', '2', '-T', String(seconds), '-n', url]);
  return Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN);
}

async function main() {
  const pgbackrest = findPgbackrest();
  const install = [...findPostgresInstalls().values()].pop();
  if (!pgbackrest || !install) {
    log(`skipped: needs pgbackrest and the PostgreSQL server binaries (${pgbackrest ? '' : 'no pgbackrest'})`);
    return;
  }
  const bin = path.dirname(install.postgres);
  const bare = mkdtempSync(path.join(tmpdir(), 'bench-backups-'));
  spawnSync('chmod', ['755', bare]); // s3rver's CA file is read by the servers' run user
  const s3 = ON_S3 ? await startS3(bare, 'bench') : undefined;
  const slipway = await startSlipway({
    SLIPWAY_NETWORK: 'shared',
    SLIPWAY_BACKUP_CHECK_MS: '500',
    ...(s3 && {
      SLIPWAY_BACKUP_S3_ENDPOINT: `localhost:${s3.port}`,
      SLIPWAY_BACKUP_S3_BUCKET: 'bench',
      SLIPWAY_BACKUP_S3_ACCESS_KEY_ID: 'S3RVER',
      SLIPWAY_BACKUP_S3_SECRET_ACCESS_KEY: 'S3RVER',
      SLIPWAY_BACKUP_S3_URI_STYLE: 'path',
      SLIPWAY_BACKUP_S3_CA_FILE: s3.caFile,
    }),
  }).catch(async (err: unknown) => {
    await s3?.close(); // a child process of its own
    throw err;
  });
  log(`repositories: ${s3 ? 'on S3 (s3rver)' : 'in the backup dir'}`);
  spawnSync('chown', ['65534:65534', bare]);
  let server: ReturnType<typeof spawn> | undefined;
  const { call } = await signUp(slipway.url);
  /** Datastores made: deleted at the end (their servers outlive Slipway by design). */
  const made: string[] = [];
  try {
    const db = await call('POST', '/v1/postgres', { name: 'bench', plan: 'basic_1gb' });
    made.push(db.id);
    const url = `/v1/postgres/${db.id}`;
    for (;;) {
      const info = await call('GET', `${url}/recovery`).catch(() => undefined);
      if (info?.recoveryStatus === 'AVAILABLE') break; // serving, first base backup taken
      await sleep(200);
    }
    const conninfo = (await call('GET', `${url}/connection-info`)).externalConnectionString as string;

    // The bare server: the same binaries and memory (basic_1gb: shared_buffers 256 MB), archiving off.
    const port = await freePort();
    await runChecked([...asNobody, install.initdb, '-D', `${bare}/data`, '-U', 'bench', '-A', 'trust', '-N']);
    server = spawn(
      asNobody[0] ?? install.postgres,
      [
        ...asNobody.slice(1),
        ...(asNobody.length ? [install.postgres] : []),
        '-D',
        `${bare}/data`,
        '-p',
        String(port),
        '-k',
        bare,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'shared_buffers=256MB',
        '-c',
        'max_wal_size=512MB',
      ],
      { stdio: 'ignore' },
    );
    const bareUrl = `postgres://bench@127.0.0.1:${port}/postgres`;
    for (;;) {
      const c = new pg.Client({ connectionString: bareUrl });
      if (
        await c.connect().then(
          () => true,
          () => false,
        )
      ) {
        await c.end();
        break;
      }
      await sleep(50);
    }

    log(`pgbench -i -s ${SCALE} on both`);
    await runChecked([path.join(bin, 'pgbench'), '-i', '-q', '-s', String(SCALE), conninfo]);
    await runChecked([path.join(bin, 'pgbench'), '-i', '-q', '-s', String(SCALE), bareUrl]);

    const on: number[] = [];
    const off: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      log(`round ${round + 1}: pgbench ${TPS_SECONDS} s each`);
      on.push(await tps(bin, conninfo, TPS_SECONDS));
      off.push(await tps(bin, bareUrl, TPS_SECONDS));
    }
    const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;

    // Base backups: Slipway's pgBackRest full backup, with its config, as the run user; pg_basebackup of the bare one.
    const conf = `${slipway.dataDir}/backups/postgres/${db.id}/pgbackrest.conf`;
    // Slipway runs it in a mount namespace that keeps only its dirs; by hand, the run user needs a way through.
    for (const dir of [slipway.dataDir, `${slipway.dataDir}/datastores`, `${slipway.dataDir}/datastores/${db.id}`])
      await runChecked(['chmod', 'o+x', dir]);
    log('base backups');
    const backupMs = await timed(() =>
      runChecked([...asNobody, pgbackrest, `--config=${conf}`, `--stanza=${db.id}`, 'backup', '--type=full']),
    );
    const baseDir = path.join(bare, 'basebackup');
    const basebackupMs = await timed(() =>
      runChecked([path.join(bin, 'pg_basebackup'), '-d', bareUrl, '-D', baseDir, '-X', 'stream', '-c', 'fast']),
    );

    // Exports: through the API (pg_dump -Fc by Slipway) and by hand.
    log('exports');
    let started = performance.now();
    const exp = await call('POST', `${url}/export`);
    for (;;) {
      const list = (await call('GET', `${url}/export`)) as Array<{ id: string; status: string }>;
      const mine = list.find((e) => e.id === exp.id);
      if (mine && mine.status !== 'running') {
        if (mine.status !== 'done') throw new Error(`export ${mine.status}`);
        break;
      }
      await sleep(50);
    }
    const exportMs = performance.now() - started;
    const dumpMs = await timed(() =>
      runChecked([path.join(bin, 'pg_dump'), '-Fc', '-f', path.join(bare, 'x.dump'), bareUrl]),
    );

    // Point-in-time recovery to a moment ago: POST to the new datastore available.
    log('point-in-time recovery');
    await sleep(1100);
    started = performance.now();
    const recovered = await call('POST', `${url}/recovery`, { restoreTime: new Date(Date.now() - 1000).toISOString() });
    made.push(recovered.id);
    for (;;) {
      const { status } = await call('GET', `/v1/postgres/${recovered.id}`);
      if (status === 'available') break;
      await sleep(100);
    }
    const recoveryMs = performance.now() - started;

    const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;
    const result = {
      bench: 'backups',
      smoke: SMOKE,
      repository: ON_S3 ? 's3' : 'local',
      scale: SCALE,
      tps: { archiving: Math.round(mean(on)), bare: Math.round(mean(off)), ratio: ratio(mean(on), mean(off)) },
      baseBackupMs: { pgbackrest: Math.round(backupMs), pgBasebackup: Math.round(basebackupMs) },
      baseBackupRatio: ratio(backupMs, basebackupMs),
      exportMs: { api: Math.round(exportMs), pgDump: Math.round(dumpMs) },
      exportRatio: ratio(exportMs, dumpMs),
      recoveryToAvailableMs: Math.round(recoveryMs),
    };
    console.log(
      table(
        ['measure', 'value', 'target'],
        [
          ['pgbench TPS archiving / bare', `${result.tps.archiving} / ${result.tps.bare}`, ''],
          ['  ratio', result.tps.ratio, '>= 0.9'],
          ['base backup ms: pgBackRest / pg_basebackup', `${Math.round(backupMs)} / ${Math.round(basebackupMs)}`, ''],
          ['  ratio', result.baseBackupRatio, ''],
          ['export ms: API / pg_dump', `${Math.round(exportMs)} / ${Math.round(dumpMs)}`, ''],
          ['  ratio', result.exportRatio, ''],
          ['point-in-time recovery, POST -> available (ms)', result.recoveryToAvailableMs, ''],
        ],
      ),
    );
    console.log(JSON.stringify(result));
  } catch (err) {
    log(`slipway's last output:\n${slipway.output()}`);
    throw err;
  } finally {
    server?.kill('SIGINT');
    if (server) await new Promise((r) => server!.once('exit', r));
    for (const id of made) await call('DELETE', `/v1/postgres/${id}`).catch(() => undefined);
    await slipway.stop();
    await s3?.close();
    rmSync(bare, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
