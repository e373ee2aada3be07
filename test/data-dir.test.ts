/**
 * `npm start` from a checkout under /root without bubblewrap: apps run as nobody and open their
 * files through the data dir's path, which /root (0700) blocks. The default data dir then moves to
 * the system dir; a data dir the operator chose, or one that already holds data, stays.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chooseDataDir } from '../src/runtime/local/data-dir.js';

const root = process.getuid?.() === 0;
const made: string[] = [];
const tempDir = (mode: number) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-data-dir-'));
  chmodSync(dir, mode);
  made.push(dir);
  return dir;
};
afterAll(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe.skipIf(!root)('the default data dir without bubblewrap', () => {
  const closed = tempDir(0o700); // like /root
  const open = tempDir(0o755);
  const systemDir = path.join(open, 'var-lib-slipway');
  const dataDir = path.join(closed, 'checkout', '.slipway');
  const off = { dataDir, sandbox: 'off' as const };

  it('moves to the system dir when apps could not pass through a dir above it, and says why', () => {
    const chosen = chooseDataDir(off, { explicit: false, systemDir });
    expect(chosen.dataDir).toBe(systemDir);
    expect(chosen.reason).toContain(`${closed} (mode 0700) is closed to it`);
    expect(chosen.reason).toContain('SLIPWAY_DATA_DIR');
    // Not installed counts as off too.
    const auto = chooseDataDir({ dataDir, sandbox: 'auto' }, { explicit: false, systemDir, bwrapInstalled: false });
    expect(auto.dataDir).toBe(systemDir);
  });

  it('stays where the operator chose, where data already is, with bubblewrap, or when apps can reach it', () => {
    expect(chooseDataDir(off, { explicit: true, systemDir })).toEqual({ dataDir });
    expect(chooseDataDir({ dataDir, sandbox: 'auto' }, { explicit: false, systemDir, bwrapInstalled: true })).toEqual({
      dataDir,
    });
    const reachable = path.join(open, '.slipway');
    expect(chooseDataDir({ dataDir: reachable, sandbox: 'off' }, { explicit: false, systemDir })).toEqual({
      dataDir: reachable,
    });
    mkdirSync(dataDir, { recursive: true });
    expect(chooseDataDir(off, { explicit: false, systemDir })).toEqual({ dataDir });
  });
});
