/**
 * A key-value export copies the server's snapshot out of a dir its run user owns: a link planted in the snapshot's
 * place is refused, never followed (Slipway copies as root).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copySnapshot } from '../src/provisioners/keyvalue/snapshot.js';

const dir = mkdtempSync(path.join(tmpdir(), 'slipway-snapshot-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('copySnapshot', () => {
  it('copies a regular file, and refuses a link in its place', async () => {
    writeFileSync(path.join(dir, 'dump.rdb'), 'REDIS0010 data');
    await copySnapshot(path.join(dir, 'dump.rdb'), path.join(dir, 'export-1'));
    expect(readFileSync(path.join(dir, 'export-1'), 'utf8')).toBe('REDIS0010 data');

    writeFileSync(path.join(dir, 'secret'), 'root only');
    symlinkSync(path.join(dir, 'secret'), path.join(dir, 'linked.rdb'));
    await expect(copySnapshot(path.join(dir, 'linked.rdb'), path.join(dir, 'export-2'))).rejects.toThrow(/ELOOP/);
    expect(existsSync(path.join(dir, 'export-2'))).toBe(false);
  });
});
