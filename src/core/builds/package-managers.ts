import { createHash } from 'node:crypto';
import { closeSync, createReadStream, lstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';

/**
 * How a Node project installs its dependencies, read the standard way (docs/deploys.md, "Builds"): the `packageManager` field
 * first (Corepack runs that exact version), else the lockfile present, else npm. Yarn 2+ ("berry") is told from
 * classic by that field, a `.yarnrc.yml`, or its lockfile's `__metadata` header.
 */
export type PackageManager = 'npm' | 'yarn' | 'pnpm';

export interface NodeProject {
  manager: PackageManager;
  /** The lockfile the install follows; undefined: none, so npm resolves afresh (`npm install`). */
  lockfile?: string;
  berry: boolean;
  hasDependencies: boolean;
  /** The source ships its own node_modules: nothing to install, nothing to cache. */
  vendored: boolean;
  scripts: Record<string, string>;
  /** package.json as read, for the dependency key. */
  packageJsonText: string;
}

const LOCKFILES: Array<[string, PackageManager]> = [
  ['pnpm-lock.yaml', 'pnpm'],
  ['yarn.lock', 'yarn'],
  ['package-lock.json', 'npm'],
  ['npm-shrinkwrap.json', 'npm'],
];

export interface PackageJson {
  packageManager?: unknown;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/** Real ones are kilobytes; one of a gigabyte (the archive allows it) would be read whole on the event loop. */
const PROJECT_FILE_MAX_BYTES = 1024 * 1024;

/** A project file Slipway reads itself (package.json, Procfile): a regular file under 1 MiB, else undefined. */
export function readProjectFile(file: string): string | undefined {
  const stat = entry(file);
  if (!stat?.isFile() || stat.size > PROJECT_FILE_MAX_BYTES) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** `dir`'s package.json when it holds an object, else undefined. Build and start read it here. */
export function readPackageJson(dir: string): { text: string; pkg: PackageJson } | undefined {
  const text = readProjectFile(path.join(dir, 'package.json'));
  if (text === undefined) return undefined;
  try {
    const pkg = JSON.parse(text) as unknown;
    return pkg && typeof pkg === 'object' && !Array.isArray(pkg) ? { text, pkg: pkg as PackageJson } : undefined;
  } catch {
    return undefined;
  }
}

/** lstat: a link is never followed. */
function entry(file: string) {
  try {
    return lstatSync(file);
  } catch {
    return undefined;
  }
}
/** A regular file in the project (a lockfile that is a symlink could point anywhere, so it is not one). */
const isFile = (file: string) => entry(file)?.isFile() ?? false;

/** `yarn@4.5.0+sha512…` → ['yarn', 4]; anything else → undefined. */
function pinnedManager(field: unknown): [PackageManager, number] | undefined {
  const match = typeof field === 'string' ? /^(npm|yarn|pnpm)@(\d+)\./.exec(field) : null;
  return match ? [match[1] as PackageManager, Number(match[2])] : undefined;
}

function isBerry(dir: string, pinned: [PackageManager, number] | undefined, lockfile: string | undefined): boolean {
  if (pinned?.[0] === 'yarn') return pinned[1] >= 2;
  if (isFile(path.join(dir, '.yarnrc.yml'))) return true;
  if (lockfile !== 'yarn.lock') return false;
  return head(path.join(dir, lockfile), 4096).includes('__metadata:');
}

/** The first `bytes` of a file, without reading the rest. */
function head(file: string, bytes: number): string {
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    return buffer.toString('utf8', 0, readSync(fd, buffer, 0, bytes, 0));
  } finally {
    closeSync(fd);
  }
}

/** The project in `dir`, or undefined when there is no package.json (nothing Node to build). */
export function detectNodeProject(dir: string): NodeProject | undefined {
  const read = readPackageJson(dir);
  if (!read) return undefined;
  const { pkg } = read;
  const pinned = pinnedManager(pkg.packageManager);
  const present = LOCKFILES.filter(([file]) => isFile(path.join(dir, file)));
  const lockfile = pinned ? present.find(([, manager]) => manager === pinned[0])?.[0] : present[0]?.[0];
  const manager = pinned?.[0] ?? present[0]?.[1] ?? 'npm';
  const berry = manager === 'yarn' && isBerry(dir, pinned, lockfile);
  return {
    manager,
    lockfile,
    berry,
    hasDependencies:
      Object.keys({ ...pkg.dependencies, ...pkg.devDependencies, ...pkg.optionalDependencies }).length > 0,
    // Anything there, a link included: the cache never copies over or through it.
    vendored: entry(path.join(dir, 'node_modules')) !== undefined,
    scripts: pkg.scripts && typeof pkg.scripts === 'object' ? pkg.scripts : {},
    packageJsonText: read.text,
  };
}

/**
 * What decides node_modules, hashed: lockfile, package.json, manager, the build's Node version and platform (the build
 * cache's key). The lockfile is streamed: it may be as large as the archive allows.
 */
export async function dependencyKey(dir: string, project: NodeProject, nodeVersion: string): Promise<string> {
  const { manager, berry, lockfile } = project;
  const hash = createHash('sha256');
  hash.update(JSON.stringify([1, manager, berry, lockfile, `v${nodeVersion}`, process.platform, process.arch]));
  hash.update(project.packageJsonText);
  if (lockfile) await pipeline(createReadStream(path.join(dir, lockfile)), hash);
  return hash.digest('hex');
}

/**
 * The install command. With a lockfile it is followed exactly, as CI installs do. `cached`: node_modules was restored
 * from this same lockfile, so npm checks and completes it (`npm ci` would delete it first); the others are already
 * no-ops on an up-to-date node_modules.
 */
export function installCommand(project: NodeProject, cached: boolean): string {
  switch (project.manager) {
    case 'pnpm':
      return project.lockfile ? 'pnpm install --frozen-lockfile' : 'pnpm install';
    case 'yarn':
      if (!project.lockfile) return 'yarn install';
      return project.berry ? 'yarn install --immutable' : 'yarn install --frozen-lockfile';
    case 'npm':
      return project.lockfile && !cached
        ? 'npm ci --no-audit --no-fund'
        : `npm install --no-audit --no-fund${cached ? ' --prefer-offline' : ''}`;
  }
}

/** Install (when there is something to install) then the `build` script, with the project's package manager. */
export function defaultBuildCommand(project: NodeProject, cached: boolean): string {
  const install = project.hasDependencies && !project.vendored ? installCommand(project, cached) : '';
  const build = project.scripts.build ? `${project.manager} run build` : '';
  return [install, build].filter(Boolean).join(' && ');
}
