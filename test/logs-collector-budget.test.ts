/**
 * The log budget and the backlog: output printed while Slipway was down is collected in full after a restart, but an
 * instance that starts while Slipway runs is charged for all it prints, including what it printed before the collector
 * found it (else a flood at start-up is stored whole: the log-flood test's bound, met by chance).
 * The collector tails real files; the lines it hands on are kept here instead of in the store.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogBudget } from '../src/observability/logs/budget.js';
import { createLogCollector, type TailedInstance } from '../src/observability/logs/collector.js';
import type { LogSink } from '../src/observability/logs/sink.js';
import type { NewLogEntry } from '../src/store/repos/logs.js';
import { sleep, waitFor } from './helpers/process.js';

const RATE = 100;
const BURST = 100;
const LINES = 20_000;
const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;

function setup() {
  const root = mkdtempSync(path.join(tmpdir(), 'slipway-collector-'));
  const stored: NewLogEntry[] = [];
  let running: TailedInstance[] = [];
  const sink = { backlogged: false, push: (batch: NewLogEntry[]) => void stored.push(...batch) } as unknown as LogSink;
  const collector = createLogCollector({
    repo: { offsets: async () => new Map() },
    sink,
    budget: createLogBudget({ ratePerSec: RATE, burst: BURST, reportMs: 1000, onReport() {} }),
    instances: async () => running,
    instanceDir: (_serviceId, instanceId) => path.join(root, instanceId),
    pollMs: 20,
    log: silent,
  });
  /** An instance whose stdout already holds LINES lines. */
  const printed = (instanceId: string): TailedInstance => {
    mkdirSync(path.join(root, instanceId));
    const text = Array.from({ length: LINES }, (_, i) => `line ${i}\n`).join('');
    writeFileSync(path.join(root, instanceId, 'stdout.log'), text);
    return { instanceId, serviceId: 'srv-flood', workspaceId: 'ws', deployId: 'dep', active: true };
  };
  const run = (list: TailedInstance[]) => (running = list);
  return { root, stored, collector, printed, run };
}

describe('the log budget and what was printed before the collector read it', () => {
  let cleanup: () => Promise<void> = async () => undefined;
  afterEach(() => cleanup());

  it('charges an instance started while Slipway runs for what it printed before it was found', async () => {
    const t = setup();
    cleanup = async () => (await t.collector.stop(), rmSync(t.root, { recursive: true, force: true }));
    t.collector.start();
    await sleep(100); // the first refresh found nothing: whatever appears now started while Slipway runs
    const began = Date.now();
    t.run([t.printed('inst-new')]);
    t.collector.refreshSoon();
    await waitFor('the first lines', async () => t.stored.length > 0 || undefined, 5000);
    await sleep(500);
    const seconds = (Date.now() - began) / 1000 + 1;
    expect(t.stored.length).toBeLessThanOrEqual(BURST + RATE * seconds);
    expect(t.stored[0]?.message).toBe('line 0');
  });

  it('collects in full what an instance running before Slipway started printed while it was down', async () => {
    const t = setup();
    cleanup = async () => (await t.collector.stop(), rmSync(t.root, { recursive: true, force: true }));
    t.run([t.printed('inst-old')]);
    t.collector.start();
    await waitFor('every line', async () => t.stored.length >= LINES || undefined, 10_000);
    expect(t.stored.map((e) => e.message)).toEqual(Array.from({ length: LINES }, (_, i) => `line ${i}`));
  });
});
