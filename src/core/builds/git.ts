import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Command, RunResult } from '../../lib/exec.js';
import type { Limits } from '../../model/limits.js';
import type { Runtime } from '../../runtime/types.js';
import { gitCloneCommand, gitLsRemoteCommand, gitTransport } from './commands.js';
import { DISK_FULL, summarizeGitFailure } from './git-errors.js';

/** What git may use and how long it may take (config: SLIPWAY_GIT_*). */
export interface GitSettings {
  /** The transports a repo may use (commands.ts allowedGitProtocols). */
  protocols: string[];
  /** A clone or a fetch that receives nothing for this long is stopped (a transport that hangs). */
  stallMs: number;
  /** The longest a clone may take in all. */
  cloneTimeoutMs: number;
  /** The longest a poll (`git ls-remote`) may take in all. */
  pollTimeoutMs: number;
}

/** A git command failed: `message` is Slipway's summary (the command and a short reason), never the remote's words. */
export class GitError extends Error {}

/** For a poll: no clone, a small sandbox. */
const LS_REMOTE_LIMITS: Limits = { memoryMb: 256, cpuMillicores: 500, pids: 64, diskMb: 16 };

/**
 * git runs in the sandbox; a repository on this machine that the operator allowed (SLIPWAY_GIT_ALLOW_LOCAL) is owned by
 * another user than the one git runs as, which git refuses unless told the directory is safe: a global config in the
 * sandbox's private HOME says so. Then the command given as the script's arguments.
 */
const SCRIPT = `printf '[safe]\\n\\tdirectory = *\\n' > "$HOME/.gitconfig" && exec "$@"`;

/** Clone, check out the commit when one is given, and write the head's id and subject to a file: one sandbox. */
const CLONE_SCRIPT =
  `printf '[safe]\\n\\tdirectory = *\\n' > "$HOME/.gitconfig" || exit 1; ` +
  'dir=$1; commit=$2; head=$3; shift 3; ' +
  '"$@" || exit $?; ' +
  'if [ -n "$commit" ]; then git -C "$dir" -c advice.detachedHead=false checkout --quiet --detach "$commit" -- || exit 3; fi; ' +
  'git -C "$dir" log -1 --format=%H%n%s > "$head"';

const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', GIT_CONFIG_NOSYSTEM: '1', PATH: '/usr/bin:/bin' };

/** The local repository a `file` transport reads, for the sandbox to see (read-only); undefined for a remote. */
function localRepoDir(repo: string): string | undefined {
  if (gitTransport(repo) !== 'file') return undefined;
  const local = repo.startsWith('file://') ? decodeURIComponent(repo.slice('file://'.length)) : repo;
  return path.isAbsolute(local) && existsSync(local) ? path.resolve(local) : undefined;
}

const inSandbox = (script: string, cmd: Command, head: string[] = []): Command => ({
  file: '/bin/sh',
  args: ['-c', script, 'slipway-git', ...head, cmd.file, ...cmd.args],
  env: { ...GIT_ENV, ...cmd.env },
});

/**
 * git for deploys, blueprints and polls (docs/architecture.md, "Git"): every clone and `ls-remote` runs through the
 * runtime as a build does (its namespace and egress rules, the app user, a sandbox), never on the host's network;
 * what it writes is on the build disk it is given. A failure is summarized by Slipway, never quoted.
 */
export function createGit(deps: { runtime: Pick<Runtime, 'runTool'>; settings: GitSettings }) {
  const { settings } = deps;

  async function runGit(
    cmd: Command,
    opts: { repo: string; cwd: string; writable: string[]; timeoutMs: number; limits: Limits; signal?: AbortSignal },
  ) {
    const local = localRepoDir(opts.repo);
    return deps.runtime.runTool({
      command: cmd,
      cwd: opts.cwd,
      writableDirs: opts.writable,
      readOnlyDirs: local ? [local] : [],
      timeoutMs: opts.timeoutMs,
      idleTimeoutMs: settings.stallMs,
      signal: opts.signal,
      limits: opts.limits,
      maxOutputBytes: 16 * 1024,
    });
  }

  return {
    settings,

    /**
     * Clones `repo` into `into` (which must not exist; its parent is writable and on a build disk): the branch head
     * (shallow), or the history needed to check out `commitId`. Returns the commit checked out and its subject.
     */
    async clone(opts: {
      repo: string;
      branch?: string;
      commitId?: string;
      token?: string;
      into: string;
      limits: Limits;
      signal?: AbortSignal;
      /** Whether the disk is full now: the summary says so with its size. */
      diskFull?(): string | undefined;
      /** What to say when git ran out of room (it removes what it wrote before it exits). */
      diskFullMessage?: string;
    }): Promise<{ commitId: string; message: string }> {
      const parent = path.dirname(opts.into);
      const headFile = path.join(parent, `.${path.basename(opts.into)}.head`);
      const clone = gitCloneCommand(opts.repo, opts.into, {
        branch: opts.branch,
        commitId: opts.commitId,
        protocols: settings.protocols,
        token: opts.token,
      });
      const result = await runGit(inSandbox(CLONE_SCRIPT, clone, [opts.into, opts.commitId ?? '', headFile]), {
        repo: opts.repo,
        cwd: parent,
        writable: [parent],
        timeoutMs: settings.cloneTimeoutMs,
        limits: opts.limits,
        signal: opts.signal,
      });
      if (result.exitCode !== 0 || result.timedOut || result.canceled)
        throw new GitError(cloneFailure(result, opts, settings));
      const [commitId = '', ...subject] = readFileSync(headFile, 'utf8').trim().split('\n');
      rmSync(headFile, { force: true });
      return { commitId, message: subject.join('\n') };
    },

    /** The commit `branch` (else HEAD) points at, or a GitError saying why it could not be read. */
    async lsRemote(opts: { repo: string; branch?: string; signal?: AbortSignal }): Promise<string> {
      const ls = gitLsRemoteCommand(opts.repo, { branch: opts.branch, protocols: settings.protocols });
      const result = await runGit(inSandbox(SCRIPT, ls), {
        repo: opts.repo,
        cwd: '/',
        writable: [],
        timeoutMs: settings.pollTimeoutMs,
        limits: LS_REMOTE_LIMITS,
        signal: opts.signal,
      });
      if (result.exitCode !== 0 || result.timedOut)
        throw new GitError(`git ls-remote of ${opts.repo} failed: ${summarizeGitFailure(result, settings)}`);
      // git matches the pattern against the end of every ref name (`a/refs/heads/main` too): take the exact one.
      const ref = opts.branch ? `refs/heads/${opts.branch}` : 'HEAD';
      for (const line of result.output.split('\n')) {
        const [commit, name] = line.trim().split('\t');
        if (name === ref && commit && /^[0-9a-f]{40,64}$/.test(commit)) return commit;
      }
      throw new GitError(
        `git ls-remote of ${opts.repo} failed: ${opts.branch ? `branch ${opts.branch} not found` : 'no HEAD'}`,
      );
    },
  };
}
export type Git = ReturnType<typeof createGit>;

function cloneFailure(
  result: RunResult,
  opts: { repo: string; commitId?: string; diskFull?(): string | undefined; diskFullMessage?: string },
  settings: GitSettings,
): string {
  const what = `git clone of ${opts.repo}`;
  const full = opts.diskFull?.();
  if (full) return `${what} failed: ${full}`;
  if (result.exitCode === 3 && opts.commitId)
    return `git checkout ${opts.commitId} failed: no such commit in the repository`;
  const summary = summarizeGitFailure(result, settings);
  if (summary === DISK_FULL && opts.diskFullMessage) return `${what} failed: ${opts.diskFullMessage}`;
  return `${what} failed: ${summary}`;
}
