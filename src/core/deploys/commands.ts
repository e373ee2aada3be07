import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from '../../lib/exec.js';
import type { ServiceDetails } from '../services/details.js';

interface PackageJson {
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

function packageJson(dir: string): PackageJson | undefined {
  try {
    return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

/** The build command: the configured one, else what a Node project asks for (npm ci/install + build). */
export function buildCommandFor(dir: string, details: ServiceDetails): string {
  if (details.buildCommand) return details.buildCommand;
  const pkg = packageJson(dir);
  if (!pkg) return '';
  const hasDeps = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).length > 0;
  // Nothing to install (no dependencies, or a vendored node_modules): skip npm entirely.
  const install =
    !hasDeps || existsSync(path.join(dir, 'node_modules'))
      ? ''
      : existsSync(path.join(dir, 'package-lock.json'))
        ? 'npm ci'
        : 'npm install';
  return [install, pkg.scripts?.build ? 'npm run build' : ''].filter(Boolean).join(' && ');
}

/** The start command: configured, else a Procfile `web:` line, else package.json's start script, else `node index.js`. */
export function startCommandFor(dir: string, details: ServiceDetails): string | undefined {
  if (details.startCommand) return details.startCommand;
  try {
    const web = readFileSync(path.join(dir, 'Procfile'), 'utf8')
      .split('\n')
      .find((l) => /^web:/.test(l.trim()));
    if (web) return web.trim().slice(4).trim();
  } catch {
    // no Procfile
  }
  const pkg = packageJson(dir);
  // `npm start` would run this script under an npm process: ~1.5 s of npm start-up per
  // instance, and one more process between the app and its SIGTERM. Run the script itself.
  if (pkg?.scripts?.start) return `PATH="$PWD/node_modules/.bin:$PATH" exec ${pkg.scripts.start}`;
  if (existsSync(path.join(dir, 'index.js'))) return 'node index.js';
  return undefined;
}

const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', PATH: process.env.PATH ?? '/usr/bin:/bin' };

/**
 * The git transports a repo may use. The clone runs as Slipway's own user, so the local file
 * system (`file://`, a path) would let any workspace clone any repository this machine holds:
 * only when the operator allows it (SLIPWAY_GIT_ALLOW_LOCAL). Remote helpers (`ext::…`) never.
 */
export const allowedGitProtocols = (allowLocal: boolean) => [
  'https',
  'http',
  'ssh',
  'git',
  ...(allowLocal ? ['file'] : []),
];

/**
 * The transport git would use for `repo` (its URL rules): a scheme, `ssh` for `host:path`, `file`
 * for a path, or a helper's name for `name::address`. Case is kept, as git keeps it (`HTTP://`
 * is not `http` to GIT_ALLOW_PROTOCOL).
 */
export function gitTransport(repo: string): string {
  const helper = /^([A-Za-z][A-Za-z0-9+.-]*)::/.exec(repo);
  if (helper) return helper[1]!;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(repo);
  if (scheme) return scheme[1] === 'git+ssh' || scheme[1] === 'ssh+git' ? 'ssh' : scheme[1]!;
  const colon = repo.indexOf(':');
  return colon > 0 && !repo.slice(0, colon).includes('/') ? 'ssh' : 'file';
}

/** `git clone` of a branch (shallow) or of the history needed to check out a commit, over `protocols` only. */
export function gitCloneCommand(
  repo: string,
  dir: string,
  opts: { branch?: string; commitId?: string; protocols: string[] },
): Command {
  const args = ['clone', '--no-tags', '--quiet'];
  if (!opts.commitId) args.push('--depth', '1');
  if (opts.branch) args.push('--single-branch', '--branch', opts.branch);
  args.push('--', repo, dir);
  return { file: 'git', args, env: { ...GIT_ENV, GIT_ALLOW_PROTOCOL: opts.protocols.join(':') } };
}

export const gitCheckoutCommand = (dir: string, commitId: string): Command => ({
  file: 'git',
  args: ['-C', dir, '-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--detach', commitId, '--'],
  env: GIT_ENV,
});

/** Prints the commit id and subject on two lines. */
export const gitHeadCommand = (dir: string): Command => ({
  file: 'git',
  args: ['-C', dir, 'log', '-1', '--format=%H%n%s'],
  env: GIT_ENV,
});
