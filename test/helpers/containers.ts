/**
 * Container images for the tests, made from this machine's own files (no internet): a base image with busybox and
 * this Node.js (its binary and the libraries it links), imported with Podman and pushed to a real registry (Debian's
 * docker-registry) that a test starts on one of the host's addresses, where builds may reach it (SLIPWAY_EGRESS_ALLOW).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import bcrypt from 'bcryptjs';
import { waitFor } from './wait.js';

/** test/fixtures/apps, found from here: apps.ts would bring vitest along, which a bench cannot load. */
const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/apps');
const RUNC = ['/usr/sbin/runc', '/usr/bin/runc'].find((file) => existsSync(file));
/** Whether this machine can run the container tests (Podman, runc, the registry, busybox). */
export const hasContainerEngine =
  existsSync('/usr/bin/podman') && !!RUNC && existsSync('/usr/bin/docker-registry') && existsSync('/bin/busybox');

/** Shared by every test file of a run (the image is the same): built once. */
const WORK = path.join(tmpdir(), 'slipway-test-images');
const STORAGE = path.join(WORK, 'storage');
const podman = (...args: string[]) =>
  execFileSync(
    'podman',
    [
      '--root',
      STORAGE,
      '--runroot',
      path.join(WORK, 'run'),
      '--runtime',
      RUNC!,
      '--cgroup-manager',
      'cgroupfs',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 },
  ).toString();

/** The libraries `file` links (ldd's paths). */
export function librariesOf(file: string): string[] {
  return execFileSync('ldd', [file])
    .toString()
    .split('\n')
    .map((line) => /(\/\S+) \(0x/.exec(line)?.[1])
    .filter((lib): lib is string => !!lib);
}

/** This machine's npm (a package of plain JavaScript): where node:20-slim has it, for real Dockerfiles' `RUN npm …`. */
const NPM = '/usr/lib/node_modules/npm';

/**
 * A rootfs tarball: busybox as /bin/sh and friends, this Node as /usr/local/bin/node, /tmp, nobody's /etc/passwd line;
 * with `npm`, this machine's npm as /usr/local/bin/npm and npx.
 */
export function nodeRootfsTar(opts: { npm?: boolean } = {}): string {
  const tar = path.join(WORK, `node-base-v2-${process.versions.node}${opts.npm ? '-npm' : ''}.tar`);
  if (existsSync(tar)) return tar;
  mkdirSync(WORK, { recursive: true });
  const root = mkdtempSync(path.join(WORK, 'rootfs-'));
  const put = (from: string, to = from) => {
    mkdirSync(path.join(root, path.dirname(to)), { recursive: true });
    copyFileSync(from, path.join(root, to));
  };
  put('/bin/busybox', '/bin/busybox');
  for (const tool of [
    'sh',
    'ls',
    'cat',
    'echo',
    'sleep',
    'id',
    'wget',
    'env',
    'mkdir',
    'cp',
    'rm',
    'true',
    'head',
    'dd',
    'su',
    'chown',
  ])
    symlinkSync('busybox', path.join(root, 'bin', tool));
  put(process.execPath, '/usr/local/bin/node');
  for (const lib of librariesOf(process.execPath)) put(lib);
  if (opts.npm) {
    cpSync(NPM, path.join(root, 'usr/local/lib/node_modules/npm'), { recursive: true });
    for (const tool of ['npm', 'npx'])
      symlinkSync(`../lib/node_modules/npm/bin/${tool}-cli.js`, path.join(root, 'usr/local/bin', tool));
    // Their `#!/usr/bin/env node`.
    mkdirSync(path.join(root, 'usr/bin'));
    symlinkSync('../../bin/busybox', path.join(root, 'usr/bin/env'));
  }
  for (const dir of ['tmp', 'etc', 'app']) mkdirSync(path.join(root, dir), { recursive: true });
  writeFileSync(path.join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n');
  const partial = `${tar}.${process.pid}`;
  execFileSync('tar', ['-C', root, '-cf', partial, '.']);
  rmSync(root, { recursive: true, force: true });
  execFileSync('mv', [partial, tar]);
  return tar;
}

export interface TestRegistry {
  /** host:port, what image references start with. */
  address: string;
  /** Pushes the base image under `name` (`base/node:20`); with the registry's user when it has one. */
  pushBase(name: string, opts?: { npm?: boolean }): string;
  /** Imports a rootfs tarball and pushes it as `name`: the reference by its digest (`host:port/name@sha256:…`). */
  pushTar(name: string, tar: string): string;
  /** Builds the context dir `context` (with `--build-arg`s) and pushes it as `name`. */
  pushBuilt(name: string, context: string, buildArgs?: Record<string, string>): string;
  /** Builds node-web on `base` with its VERSION file saying `version`, and pushes it as `name`. */
  pushApp(name: string, base: string, version: string): string;
  close(): Promise<void>;
}

/** docker-registry on `host` (plain HTTP), with one user when `user` is given (htpasswd, as the registry checks it). */
export async function startRegistry(
  host: string,
  user?: { name: string; password: string },
  port = 21000 + Math.floor(Math.random() * 20000),
): Promise<TestRegistry> {
  mkdirSync(WORK, { recursive: true });
  const dir = mkdtempSync(path.join(WORK, 'registry-'));
  const address = `${host}:${port}`;
  const auth = user ? `auth:\n  htpasswd:\n    realm: test\n    path: ${dir}/htpasswd\n` : '';
  if (user) writeFileSync(path.join(dir, 'htpasswd'), `${user.name}:${bcrypt.hashSync(user.password, 8)}\n`);
  writeFileSync(
    path.join(dir, 'config.yml'),
    `version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\nhttp:\n  addr: ${address}\n${auth}`,
  );
  const child: ChildProcess = spawn('/usr/bin/docker-registry', ['serve', path.join(dir, 'config.yml')], {
    stdio: 'ignore',
  });
  await waitFor(
    `the registry at ${address}`,
    async () => (await fetch(`http://${address}/v2/`).catch(() => undefined)) !== undefined,
    20_000,
  );
  const creds = user ? ['--creds', `${user.name}:${user.password}`] : [];
  const registry: TestRegistry = {
    address,
    pushBase(name, opts = {}) {
      const ref = `${address}/${name}`;
      podman('import', '--quiet', nodeRootfsTar(opts), ref);
      podman('push', '--quiet', '--tls-verify=false', ...creds, ref);
      return ref;
    },
    pushTar(name, tar) {
      const ref = `${address}/${name}`;
      const digestFile = path.join(dir, 'digest');
      podman('import', '--quiet', tar, ref);
      podman('push', '--quiet', '--tls-verify=false', '--digestfile', digestFile, ...creds, ref);
      return `${ref.replace(/:[^:/]+$/, '')}@${readFileSync(digestFile, 'utf8').trim()}`;
    },
    pushBuilt(name, context, buildArgs = {}) {
      const ref = `${address}/${name}`;
      const args = Object.entries(buildArgs).flatMap(([key, value]) => ['--build-arg', `${key}=${value}`]);
      podman('build', '--quiet', '--tls-verify=false', '--network', 'host', ...args, '--tag', ref, context);
      podman('push', '--quiet', '--tls-verify=false', ...creds, ref);
      return ref;
    },
    pushApp(name, base, version) {
      const context = mkdtempSync(path.join(WORK, 'app-'));
      cpSync(path.join(FIXTURES, 'node-web'), context, { recursive: true });
      writeFileSync(path.join(context, 'VERSION'), version);
      writeFileSync(
        path.join(context, 'Dockerfile'),
        `FROM ${base}\nWORKDIR /app\nCOPY . .\nCMD ["node", "server.js"]\n`,
      );
      try {
        return registry.pushBuilt(name, context);
      } finally {
        rmSync(context, { recursive: true, force: true });
      }
    },
    async close() {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return registry;
}
