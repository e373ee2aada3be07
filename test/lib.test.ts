import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../src/lib/cursor.js';
import { isId, newId } from '../src/lib/ids.js';
import { hashPassword, verifyPassword } from '../src/lib/passwords.js';
import { createSecretBox, loadSecretKey } from '../src/lib/secret-box.js';
import { redactUrl } from '../src/http/plugins/redact.js';
import { exitCodeOf } from '../src/core/instances/instances.js';

describe('ids', () => {
  it('are Render-style, unique, and sort by creation time', () => {
    const a = newId('service', 1_700_000_000_000);
    const b = newId('service', 1_700_000_000_001);
    expect(a).toMatch(/^srv-[0-9a-v]{20}$/);
    expect(isId('service', a)).toBe(true);
    expect(isId('deploy', a)).toBe(false);
    expect(a < b).toBe(true);
    expect(new Set(Array.from({ length: 1000 }, () => newId('user'))).size).toBe(1000);
  });
});

describe('cursors', () => {
  it('round-trip opaquely and refuse garbage', () => {
    const id = newId('apiKey');
    expect(decodeCursor(encodeCursor(id))).toBe(id);
    expect(encodeCursor(id)).not.toContain(id);
    expect(() => decodeCursor('not-a-cursor')).toThrow(/invalid cursor/);
  });
});

describe('secret box', () => {
  it('encrypts with AES-256-GCM: fresh IVs, tamper detection, wrong key refused', () => {
    const box = createSecretBox(Buffer.alloc(32, 7));
    const a = box.seal('postgres://u:p@h/db');
    expect(a).not.toContain('postgres');
    expect(box.seal('postgres://u:p@h/db')).not.toBe(a);
    expect(box.open(a)).toBe('postgres://u:p@h/db');
    const raw = Buffer.from(a.slice(3), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => box.open(`v1:${raw.toString('base64')}`)).toThrow();
    expect(() => createSecretBox(Buffer.alloc(32, 8)).open(a)).toThrow();
  });

  it('generates the key once into the data dir with 0600, or takes SLIPWAY_SECRET_KEY', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-key-'));
    const key = loadSecretKey(undefined, dir);
    expect(key).toHaveLength(32);
    expect(statSync(path.join(dir, 'secret.key')).mode & 0o777).toBe(0o600);
    expect(loadSecretKey(undefined, dir).equals(key)).toBe(true);
    expect(readFileSync(path.join(dir, 'secret.key'), 'utf8')).toBe(key.toString('hex'));
    const hex = 'ab'.repeat(32);
    expect(loadSecretKey(hex, dir).toString('hex')).toBe(hex);
    expect(() => loadSecretKey('too-short', dir)).toThrow(/32 bytes/);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('passwords', () => {
  it('are hashed with salted scrypt and verified in constant time', async () => {
    const hash = await hashPassword('correct horse');
    expect(hash).toMatch(/^scrypt\$32768\$8\$3\$/);
    expect(hash).not.toContain('correct horse');
    expect(await hashPassword('correct horse')).not.toBe(hash);
    expect(await verifyPassword('correct horse', hash)).toBe(true);
    expect(await verifyPassword('correct horsE', hash)).toBe(false);
    expect(await verifyPassword('x', 'garbage')).toBe(false);
  });
});

describe('redaction', () => {
  it('removes invite tokens and secrets from logged URLs', () => {
    expect(redactUrl('/v1/team-invites/inv_SECRET/accept?x=1')).toBe('/v1/team-invites/[redacted]/accept?x=1');
    expect(redactUrl('/invites/inv_SECRET?x=1')).toBe('/invites/[redacted]?x=1');
    expect(redactUrl('/cb?code=1&token=abc&password=p')).toBe(
      '/cb?code=[redacted]&token=[redacted]&password=[redacted]',
    );
    expect(redactUrl('/deploy/srv-1?key=dhk_x&ref=abc')).toBe('/deploy/srv-1?key=[redacted]&ref=abc');
  });
});

describe("a run's exit status, in a dir the run can write", () => {
  it('is read from a small regular file only: not through a link, not from a FIFO (which would block), not past 16 bytes', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-exit-'));
    try {
      const at = (name: string) => ({ exitCodeFile: path.join(dir, name) });
      writeFileSync(path.join(dir, 'plain'), '7\n');
      expect(exitCodeOf(at('plain'))).toBe(7);
      expect(exitCodeOf(at('missing'))).toBeUndefined();
      symlinkSync(path.join(dir, 'plain'), path.join(dir, 'link'));
      expect(exitCodeOf(at('link'))).toBeUndefined();
      execFileSync('mkfifo', [path.join(dir, 'fifo')]);
      const began = Date.now();
      expect(exitCodeOf(at('fifo'))).toBeUndefined(); // no writer: a plain open would never return
      expect(Date.now() - began).toBeLessThan(1000);
      writeFileSync(path.join(dir, 'long'), '1'.repeat(20) + '\n');
      expect(exitCodeOf(at('long'))).toBe(Number('1'.repeat(16)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
