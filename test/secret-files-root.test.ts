/**
 * Secret files in a native app's root dir (docs/deploys.md, "Secret files"): the mount points Slipway makes, as root,
 * in an artifact the tenant's build produced, and never outside it.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rootSecretBinds } from '../src/runtime/local/secret-files.js';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
function layout() {
  const base = mkdtempSync(path.join(tmpdir(), 'slipway-root-secrets-'));
  dirs.push(base);
  const [app, secrets, outside] = ['app', 'secrets', 'outside'].map((d) => path.join(base, d)) as [
    string,
    string,
    string,
  ];
  for (const d of [app, secrets, outside]) mkdirSync(d);
  for (const name of ['a.txt', 'own.txt', 'dir', 'link']) writeFileSync(path.join(secrets, name), 's3cret');
  return { app, secrets, outside };
}

describe('secret files in the app root', () => {
  it('makes an empty 0444 placeholder for a name the artifact lacks, covers its own files, and leaves dirs and links', () => {
    const { app, secrets, outside } = layout();
    writeFileSync(path.join(app, 'own.txt'), 'the app');
    mkdirSync(path.join(app, 'dir'));
    symlinkSync(path.join(outside, 'x'), path.join(app, 'link'));
    const binds = rootSecretBinds(secrets, app, app);
    expect(binds.map(([, at]) => path.basename(at)).sort()).toEqual(['a.txt', 'own.txt']);
    expect(statSync(path.join(app, 'a.txt')).size).toBe(0);
    expect(statSync(path.join(app, 'a.txt')).mode & 0o777).toBe(0o444);
    expect(existsSync(path.join(outside, 'x'))).toBe(false);
  });

  it('makes nothing through a root dir that is a link out of the app dir', () => {
    const { app, secrets, outside } = layout();
    symlinkSync(outside, path.join(app, 'backend'));
    expect(rootSecretBinds(secrets, path.join(app, 'backend'), app)).toEqual([]);
    expect(existsSync(path.join(outside, 'a.txt'))).toBe(false);
    expect(rootSecretBinds(undefined, app, app)).toEqual([]);
  });
});
