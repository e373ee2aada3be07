/**
 * Reading a project as a build does (core/builds/package-managers.ts), with hostile files: Slipway reads them as
 * root, so a link is never followed and a huge file is not read; the cache key follows the lockfile's bytes.
 */
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startCommandFor } from '../src/core/builds/commands.js';
import { dependencyKey, detectNodeProject } from '../src/core/builds/package-managers.js';
import { mergeDetails } from '../src/core/services/details.js';

const dirs: string[] = [];
const project = (files: Record<string, string>) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-detect-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content);
  return dir;
};
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
const PKG = JSON.stringify({ dependencies: { ms: '^2.1.3' }, scripts: { start: 'node server.js' } });

describe('reading a project', () => {
  it("picks the lockfile, and keys the cache by its bytes and the build's Node version", async () => {
    const dir = project({ 'package.json': PKG, 'yarn.lock': '# yarn lockfile v1\n' });
    const found = detectNodeProject(dir)!;
    expect(found).toMatchObject({ manager: 'yarn', lockfile: 'yarn.lock', berry: false, hasDependencies: true });
    const key = await dependencyKey(dir, found, '20.11.1');
    expect(await dependencyKey(dir, found, '20.11.1')).toBe(key);
    expect(await dependencyKey(dir, found, '18.20.8')).not.toBe(key);
    writeFileSync(path.join(dir, 'yarn.lock'), '# yarn lockfile v1\n\n');
    expect(await dependencyKey(dir, found, '20.11.1')).not.toBe(key);
  });

  it('follows no link: a package.json, lockfile or Procfile that is a symlink is not read', () => {
    const target = project({ 'package.json': PKG, Procfile: 'web: node secret.js\n', 'yarn.lock': 'x' });
    const dir = project({});
    for (const name of ['package.json', 'Procfile', 'yarn.lock'])
      symlinkSync(path.join(target, name), path.join(dir, name));
    expect(detectNodeProject(dir)).toBeUndefined();
    expect(startCommandFor(dir, mergeDetails('web_service', {}))).toBeUndefined();
    rmSync(path.join(dir, 'package.json'));
    writeFileSync(path.join(dir, 'package.json'), PKG);
    expect(detectNodeProject(dir)?.lockfile).toBeUndefined(); // the linked yarn.lock is not the project's
  });

  it('does not read a package.json or Procfile over 1 MiB', () => {
    const huge = JSON.stringify({ scripts: { start: 'node a.js' }, pad: 'x'.repeat(2 << 20) });
    const dir = project({ 'package.json': huge, Procfile: `web: node b.js\n${'#'.repeat(2 << 20)}\n` });
    expect(detectNodeProject(dir)).toBeUndefined();
    expect(startCommandFor(dir, mergeDetails('web_service', {}))).toBeUndefined();
  });
});
