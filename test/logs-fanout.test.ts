/**
 * Two Slipway processes on one Postgres: a subscriber of one receives the lines the other
 * collects (LISTEN/NOTIFY). Postgres only (TEST_DATABASE_URL); PGlite is one process.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { deployFixture } from './helpers/apps.js';
import { client, signUp } from './helpers/client.js';
import { freePort, removeDataDir, spawnSlipway, waitFor, waitForHealthy } from './helpers/process.js';
import { bootServer, TEST_DATABASE_URL } from './helpers/server.js';

describe.skipIf(!TEST_DATABASE_URL)('log fan-out across processes', () => {
  it('delivers lines collected by one process to a subscriber of another, in order', async () => {
    const collector = await bootServer(); // runs the app and collects its lines
    const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-fanout-'));
    const port = await freePort();
    const other = spawnSlipway({
      DATABASE_URL: collector.databaseUrl!,
      SLIPWAY_DATA_DIR: dataDir,
      SLIPWAY_PORT: String(port),
      SLIPWAY_ROUTER_PORT: '0',
    });
    try {
      const otherUrl = `http://127.0.0.1:${port}`;
      await waitForHealthy(otherUrl, 30_000);
      const api = client(collector.url);
      const owner = await signUp(api);
      const { service } = await deployFixture(api, owner, 'log-printer', {
        serviceDetails: { runtime: 'node', healthCheckPath: '/healthz' },
      });
      const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/logs/subscribe?resource=${service.id}&text=out`, {
        headers: { cookie: `slipway_session=${owner.cookie}`, 'x-requested-with': 'test' },
      });
      const received: Array<{ message: string; at: number }> = [];
      ws.on('message', (data) => received.push({ message: JSON.parse(String(data)).message, at: Date.now() }));
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      await waitFor('lines via the other process', async () => received.length >= 50, 15_000, 50);
      ws.close();
      const numbers = received.map((r) => Number(/^out (\d+) (\d+)/.exec(r.message)![1]));
      expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i));
      // Printed → received across processes well within a second.
      const delays = received.map((r) => r.at - Number(/^out \d+ (\d+)/.exec(r.message)![1]));
      expect(Math.max(...delays.slice(5))).toBeLessThan(1000);
    } finally {
      await other.kill();
      await collector.close();
      await removeDataDir(dataDir);
    }
  }, 90_000);
});
