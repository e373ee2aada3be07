/**
 * `npm start` from a checkout under /root without bubblewrap: apps run as nobody and open their
 * files through the data dir's path, which /root (0700) blocks. The default data dir then moves to
 * the system dir; a data dir the operator chose, or one that already holds data, stays.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lookupUser, NOBODY } from '../src/runtime/local/capabilities.js';
import { chooseDataDir } from '../src/runtime/local/data-dir.js';
import { openWayTo } from '../src/runtime/local/host-paths.js';

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

describe.skipIf(!root)('opening the way to an app dir without bubblewrap', () => {
  it('never opens a dir a symlink inside the data dir leads to (an app can plant one in its artifact)', () => {
    const dataDir = tempDir(0o700);
    const secret = tempDir(0o700); // like /root, outside the data dir
    mkdirSync(path.join(secret, 'sub'));
    const artifact = path.join(dataDir, 'services', 'srv-x', 'artifacts', 'dep-x');
    mkdirSync(artifact, { recursive: true, mode: 0o700 });
    chmodSync(artifact, 0o755); // an artifact is readable, the dirs above it closed until opened
    symlinkSync(secret, path.join(artifact, 'a'));
    const nobody = { ...lookupUser(NOBODY)!, name: NOBODY };
    expect(() => openWayTo(dataDir, [path.join(artifact, 'a', 'sub')], nobody)).toThrow(/closed to it/);
    expect(statSync(secret).mode & 0o777).toBe(0o700);
    // Its own dirs in the data dir are opened as before.
    openWayTo(dataDir, [artifact], nobody);
    expect(statSync(path.join(dataDir, 'services')).mode & 0o777).toBe(0o711);
  });
});
