import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from '../../lib/exec.js';
import type { ServiceDetails } from '../../model/services.js';
import { readPackageJson, readProjectFile } from './package-managers.js';

const packageJson = (dir: string) => readPackageJson(dir)?.pkg;

/** Runs a package.json script itself, with the project's binaries first on the PATH. */
const scriptCommand = (script: string) => `PATH="$PWD/node_modules/.bin:$PATH" exec ${script}`;

/** Package manager commands that are not scripts. */
const BUILTINS = new Set(['install', 'i', 'add', 'remove', 'up', 'upgrade', 'dlx', 'exec', 'ci', 'link']);

/**
 * `npm start`, `yarn start`, `pnpm run web` and the like, when package.json has that script: the script itself. The
 * package manager would add its start-up (npm's ~1.5 s) and a process between the app and its SIGTERM; instances do
 * have yarn and pnpm, for the commands that are more than a script's name (`cd backend && yarn start`).
 */
function packageScriptOf(dir: string, command: string): string | undefined {
  const match = /^(?:npm|yarn|pnpm)\s+(?:run(?:-script)?\s+)?([\w:.-]+)$/.exec(command.trim());
  const name = match?.[1];
  if (!name || BUILTINS.has(name)) return undefined;
  if (command.trim().startsWith('npm') && name !== 'start' && !/\srun/.test(command)) return undefined;
  const script = packageJson(dir)?.scripts?.[name];
  return typeof script === 'string' && script.trim() ? scriptCommand(script) : undefined;
}

/** The start command: configured, else a Procfile `web:` line, else package.json's start script, else `node index.js`. */
export function startCommandFor(dir: string, details: ServiceDetails): string | undefined {
  if (details.startCommand) return packageScriptOf(dir, details.startCommand) ?? details.startCommand;
  const web = readProjectFile(path.join(dir, 'Procfile'))
    ?.split('\n')
    .find((l) => /^web:/.test(l.trim()));
  if (web) return web.trim().slice(4).trim();
  const pkg = packageJson(dir);
  // `npm start` would run this script under an npm process: ~1.5 s of npm start-up per
  // instance, and one more process between the app and its SIGTERM. Run the script itself.
  if (typeof pkg?.scripts?.start === 'string' && pkg.scripts.start) return scriptCommand(pkg.scripts.start);
  if (existsSync(path.join(dir, 'index.js'))) return 'node index.js';
  return undefined;
}

const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', PATH: '/usr/bin:/bin' };

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

/**
 * With a token (a GitHub App installation's), git asks this credential helper, which reads the token from its
 * environment: the token is never in a URL, an argument, a file or git's output.
 */
const TOKEN_HELPER =
  '!f() { test "$1" = get && echo username=x-access-token && echo "password=$SLIPWAY_GIT_TOKEN"; }; f';
const withToken = (args: string[], token: string | undefined) =>
  token ? ['-c', 'credential.helper=', '-c', `credential.helper=${TOKEN_HELPER}`, ...args] : args;
const tokenEnv = (token: string | undefined): Record<string, string> => (token ? { SLIPWAY_GIT_TOKEN: token } : {});

/** `git clone` of a branch (shallow) or of the history needed to check out a commit, over `protocols` only. */
export function gitCloneCommand(
  repo: string,
  dir: string,
  opts: { branch?: string; commitId?: string; protocols: string[]; token?: string },
): Command {
  // --progress: git prints while it receives, so a clone that stopped receiving can be told from a slow one.
  const args = ['clone', '--no-tags', '--progress'];
  if (!opts.commitId) args.push('--depth', '1');
  if (opts.branch) args.push('--single-branch', '--branch', opts.branch);
  args.push('--', repo, dir);
  return {
    file: 'git',
    args: withToken(args, opts.token),
    env: { ...GIT_ENV, GIT_ALLOW_PROTOCOL: opts.protocols.join(':'), ...tokenEnv(opts.token) },
  };
}

/** `git ls-remote` of one branch (or of HEAD without one): prints `<commit>\t<ref>`, without cloning anything. */
export function gitLsRemoteCommand(repo: string, opts: { branch?: string; protocols: string[] }): Command {
  const ref = opts.branch ? `refs/heads/${opts.branch}` : 'HEAD';
  return {
    file: 'git',
    args: ['ls-remote', '--', repo, ref],
    env: { ...GIT_ENV, GIT_ALLOW_PROTOCOL: opts.protocols.join(':') },
  };
}
