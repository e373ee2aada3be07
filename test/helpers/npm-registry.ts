/**
 * A package registry for builds that run `npm ci` or `npm install` (no internet): the stand-in packages of
 * test/fixtures/npm-packages, packed with `npm pack` and served over HTTP on one of the host's addresses, where a
 * build may reach it (SLIPWAY_EGRESS_ALLOW). `lockFor` writes the package-lock.json that `npm install` against it would:
 * npm fetches each package from its lock entry's `resolved` address.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/npm-packages');

interface Packed {
  name: string;
  version: string;
  bin?: Record<string, string>;
  tarball: Buffer;
  /** The path it is served at, as the npm registry names tarballs. */
  urlPath: string;
}

export interface NpmRegistry {
  /** package-lock.json (lockfileVersion 3) for a package.json whose dependencies are packages of this registry. */
  lockFor(packageJson: string): string;
  close(): Promise<void>;
}

function pack(dir: string, into: string): Packed {
  const meta = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Omit<Packed, 'tarball' | 'urlPath'>;
  const [{ filename }] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', into, dir], {
      stdio: ['ignore', 'pipe', 'ignore'],
    }).toString(),
  ) as [{ filename: string }];
  const tarball = readFileSync(path.join(into, filename));
  const urlPath = `/${meta.name}/-/${meta.name.split('/').pop()}-${meta.version}.tgz`;
  return { ...meta, tarball, urlPath };
}

export async function startNpmRegistry(host: string, names: string[]): Promise<NpmRegistry> {
  const work = mkdtempSync(path.join(tmpdir(), 'slipway-npm-'));
  const packages = new Map(names.map((name) => [name, pack(path.join(PACKAGES, name), work)]));
  rmSync(work, { recursive: true, force: true });
  const server = createServer((req, res) => {
    const found = [...packages.values()].find((p) => p.urlPath === req.url);
    if (!found) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(found.tarball);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const base = `http://${host}:${(server.address() as AddressInfo).port}`;
  const byName = new Map([...packages.values()].map((p) => [p.name, p]));
  return {
    lockFor(packageJson) {
      const app = JSON.parse(packageJson) as { name: string; version: string; dependencies?: Record<string, string> };
      const entries = Object.keys(app.dependencies ?? {}).map((dep) => {
        const p = byName.get(dep);
        if (!p) throw new Error(`${dep} is not a package of the test registry`);
        const integrity = `sha512-${createHash('sha512').update(p.tarball).digest('base64')}`;
        return [`node_modules/${dep}`, { version: p.version, resolved: `${base}${p.urlPath}`, integrity, bin: p.bin }];
      });
      const root = { name: app.name, version: app.version, dependencies: app.dependencies };
      return `${JSON.stringify({ name: app.name, version: app.version, lockfileVersion: 3, requires: true, packages: { '': root, ...Object.fromEntries(entries) } }, null, 2)}\n`;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
