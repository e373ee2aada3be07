/**
 * Log streams: the API's p99 (an authenticated GET /v1/services?limit=20, sequential) while Slipway forwards an app's
 * RATE lines/s to a TLS syslog receiver in this process, against the same p99 with no stream, in turn, in one run
 * (target: at most 10 ms more). Also what was forwarded: lines/s, lines lost or repeated within a phase, and
 * print → receipt latency, and Slipway's CPU in each phase.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startSyslogServer } from '../test/helpers/syslog.js';
import { fixtureArchive, log, percentile, signUp, sleep, startSlipway, table, waitLive } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const RATE = Number(process.env.BENCH_LOG_STREAM_RATE || 5000);
const SECONDS = SMOKE ? 5 : 15;
const ROUNDS = SMOKE ? 1 : 2;
const TICK_MS = 10;

const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

async function main() {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-syslog-'));
  const syslog = await startSyslogServer(dir);
  const slipway = await startSlipway({
    SLIPWAY_ROUTER_PORT: '0',
    SLIPWAY_LOG_RATE_LINES: String(RATE * 2),
    SLIPWAY_LOG_BURST_LINES: String(RATE * 10),
    SLIPWAY_LOG_STREAM_ALLOW_PRIVATE: '1',
    SLIPWAY_LOG_STREAM_CA_FILE: syslog.caFile,
    ...(process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : {}),
  });
  try {
    const { headers, workspaceId, call } = await signUp(slipway.url);
    const { service } = await call('POST', '/v1/services', {
      type: 'web_service',
      name: 'log-stream-bench',
      serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
      envVars: [
        { key: 'LINE_MS', value: String(TICK_MS) },
        { key: 'BURST', value: String((RATE * TICK_MS) / 1000) },
      ],
    });
    const up = await call(
      'POST',
      `/v1/services/${service.id}/source/upload`,
      undefined,
      await fixtureArchive('log-printer'),
    );
    await waitLive(call, service.id, up.deployId);
    await sleep(2000); // the app's first second (its deploy finishing) is not a phase's

    /** Sequential GETs for SECONDS: their latencies, and Slipway's CPU (cores) meanwhile. */
    const phase = async () => {
      const samples: number[] = [];
      const cpuFrom = cpuSeconds(slipway.pid);
      const started = Date.now();
      while (Date.now() - started < SECONDS * 1000) {
        const t = performance.now();
        const res = await fetch(`${slipway.url}/v1/services?limit=20`, { headers });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`GET /v1/services: ${res.status}`);
        samples.push(performance.now() - t);
        await sleep(2);
      }
      return { samples, cores: (cpuSeconds(slipway.pid) - cpuFrom) / ((Date.now() - started) / 1000) };
    };
    const outs = () =>
      syslog.frames.flatMap((f) => {
        const m = /^out (\d+) (\d+)/.exec(f.message);
        return m ? [{ n: Number(m[1]), latency: f.receivedAt - Number(m[2]) }] : [];
      });
    const stream = `/v1/logs/streams/owner/${workspaceId}`;
    const without: number[] = [];
    const withStream: number[] = [];
    const cores = { without: [] as number[], with: [] as number[] };
    const forwarded: Array<{ lines: number; seconds: number; gaps: number; repeats: number }> = [];
    const latencies: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      log(`round ${round + 1}: no stream`);
      const quiet = await phase();
      without.push(...quiet.samples);
      cores.without.push(quiet.cores);

      log(`round ${round + 1}: streaming`);
      await call('PUT', stream, { endpoint: `127.0.0.1:${syslog.port}`, token: 'bench-token', preview: 'send' });
      for (const deadline = Date.now() + 30_000; outs().length === 0 && Date.now() < deadline;) await sleep(20);
      const from = outs().length;
      const receivedAt = Date.now();
      const busy = await phase();
      withStream.push(...busy.samples);
      cores.with.push(busy.cores);
      const got = outs().slice(from);
      const seconds = (Date.now() - receivedAt) / 1000;
      let gaps = 0;
      let repeats = 0;
      for (let i = 1; i < got.length; i++) {
        if (got[i]!.n <= got[i - 1]!.n) repeats++;
        else if (got[i]!.n !== got[i - 1]!.n + 1) gaps++;
      }
      forwarded.push({ lines: got.length, seconds, gaps, repeats });
      for (const o of got) latencies.push(o.latency); // a spread of 100k values overflows the stack
      await call('DELETE', stream);
      await sleep(1000);
      syslog.frames.splice(0);
    }
    await call('DELETE', `/v1/services/${service.id}`);

    const p = (values: number[], q: number) => Number(percentile(values, q).toFixed(2));
    const linesPerSecond = forwarded.reduce((n, f) => n + f.lines, 0) / forwarded.reduce((n, f) => n + f.seconds, 0);
    const result = {
      rate: RATE,
      seconds: SECONDS,
      rounds: ROUNDS,
      withoutMs: { p50: p(without, 50), p99: p(without, 99), requests: without.length },
      withMs: { p50: p(withStream, 50), p99: p(withStream, 99), requests: withStream.length },
      extraP99Ms: Number((p(withStream, 99) - p(without, 99)).toFixed(2)),
      forwardedPerSecond: Math.round(linesPerSecond),
      gaps: forwarded.reduce((n, f) => n + f.gaps, 0),
      repeats: forwarded.reduce((n, f) => n + f.repeats, 0),
      printToReceiptMs: latencies.length ? { p50: p(latencies, 50), p99: p(latencies, 99) } : undefined,
      cores: {
        without: Number(Math.max(...cores.without).toFixed(3)),
        with: Number(Math.max(...cores.with).toFixed(3)),
      },
      invalidFrames: syslog.invalid.length,
    };
    log(
      table(
        ['measure', 'value', 'target'],
        [
          [
            `GET /v1/services?limit=20 p50 / p99 (ms), no stream`,
            `${result.withoutMs.p50} / ${result.withoutMs.p99}`,
            '',
          ],
          [`  while forwarding ${RATE} lines/s`, `${result.withMs.p50} / ${result.withMs.p99}`, ''],
          ['  extra p99 (ms)', result.extraP99Ms, '<= 10'],
          ['lines forwarded / s', result.forwardedPerSecond, `${RATE}`],
          ['gaps / repeats in a phase', `${result.gaps} / ${result.repeats}`, '0 / 0'],
          [
            'print -> receipt p50 / p99 (ms)',
            result.printToReceiptMs ? `${result.printToReceiptMs.p50} / ${result.printToReceiptMs.p99}` : '-',
            '',
          ],
          ['Slipway CPU without / with (cores)', `${result.cores.without} / ${result.cores.with}`, ''],
          ['invalid frames', result.invalidFrames, '0'],
        ],
      ),
    );
    console.log(JSON.stringify({ bench: 'log-streams', smoke: SMOKE, ...result }));
    if (result.invalidFrames || result.gaps || result.repeats) process.exitCode = 1;
  } finally {
    await slipway.stop();
    await syslog.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
