import type { Command } from '../../lib/exec.js';

/** How apps and builds are wrapped on this machine; decided once by detectCapabilities. */
export interface SandboxPolicy {
  bwrap?: {
    path: string;
    /** Read-only system mounts (/usr, /bin, /etc, node's install dir, ...) as bwrap arguments. */
    systemMounts: string[];
  };
  /** Drop to this user (Slipway runs as root) with util-linux setpriv, after bwrap has set up the mounts. */
  runAs?: { setprivPath: string; uid: number; gid: number };
}

/** One process to run under the policy. */
export interface SandboxedProcess {
  /** Instances must outlive Slipway; a build may die with it. */
  kind: 'instance' | 'build';
  /** A shell command line, run with /bin/sh -c. */
  command: string;
  /** The complete environment of the command. */
  env: Record<string, string>;
  cwd: string;
  readOnlyDirs: string[];
  writableDirs: string[];
  /** cgroup.procs files to join before any of the command runs, so nothing it forks escapes the limits. */
  cgroupProcsFiles: string[];
}

/** Single-quotes a word for /bin/sh. */
export const shellQuote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * Inside bwrap's pid namespace the command runs under this shell (as the app user). When the command exits on its
 * own, it kills whatever the command left behind (kill -1 reaches only this namespace), so an instance ends with its
 * main process, like a container. During a stop (SIGTERM) it instead waits for the rest of the sandbox to exit,
 * keeping bwrap, and so the instance's pid, alive until the app is really gone. Its trap has a handler rather
 * than '' so that the command does not inherit an ignored SIGTERM.
 */
export const REAPER_SCRIPT = [
  'trap stopping=1 TERM INT HUP',
  '/bin/sh -c "$1"',
  'code=$?',
  'if [ -n "$stopping" ]; then while kill -0 -1 2>/dev/null; do sleep 0.1; done; else kill -KILL -1 2>/dev/null; fi',
  'exit $code',
].join('; ');

/** Joins the cgroups as root, then becomes the real command ("$@") in the same process. */
export function cgroupJoinScript(procsFiles: string[]): string {
  const files = procsFiles.map(shellQuote).join(' ');
  return `for f in ${files}; do echo $$ > "$f" || { echo "slipway: cannot join cgroup $f" >&2; exit 125; }; done; exec "$@"`;
}

/** Binds a dir at its own path. bwrap would create missing parents 0700 (root's), which the app user cannot traverse. */
const bindAt = (flag: '--ro-bind' | '--bind', dir: string) => ['--perms', '0755', '--dir', dir, flag, dir, dir];

/** The Command that runs `proc` under `policy`: [cgroup join] → [bwrap] → [setpriv] → [reaper] → sh -c command. */
export function sandboxedCommand(policy: SandboxPolicy, proc: SandboxedProcess): Command {
  const { bwrap, runAs } = policy;
  let argv = bwrap ? ['/bin/sh', '-c', REAPER_SCRIPT, 'slipway-app', proc.command] : ['/bin/sh', '-c', proc.command];
  if (runAs) {
    argv = [runAs.setprivPath, `--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, '--clear-groups', '--no-new-privs', '--', ...argv];
  }
  let env: Record<string, string> | undefined = proc.env;
  let cwd: string | undefined = proc.cwd;
  let fd3Args: string[] | undefined;
  if (bwrap) {
    argv = [
      bwrap.path,
      ...(proc.kind === 'build' ? ['--die-with-parent'] : []),
      ...bwrap.systemMounts,
      '--proc', '/proc',
      '--dev', '/dev',
      '--perms', '1777', '--tmpfs', '/tmp',
      ...proc.readOnlyDirs.flatMap((dir) => bindAt('--ro-bind', dir)),
      ...proc.writableDirs.flatMap((dir) => bindAt('--bind', dir)),
      // No --new-session: Slipway already starts every sandbox in a session of its own without a terminal (setsid),
      // and a second one inside would take the app out of the process group, so kill(-pid) would miss it.
      '--unshare-pid', '--unshare-ipc', '--unshare-uts',
      '--chdir', proc.cwd,
      '--clearenv',
      // The environment (secrets included) comes through fd 3, not the command line.
      '--args', '3',
      '--',
      ...argv,
    ];
    // bwrap itself needs neither: the command's environment and cwd are set inside.
    fd3Args = Object.entries(proc.env).flatMap(([name, value]) => ['--setenv', name, value]);
    env = {};
    cwd = undefined;
  }
  if (proc.cgroupProcsFiles.length > 0) {
    argv = ['/bin/sh', '-c', cgroupJoinScript(proc.cgroupProcsFiles), 'slipway-cgroup-join', ...argv];
  }
  const [file, ...args] = argv as [string, ...string[]];
  return { file, args, env, ...(cwd === undefined ? {} : { cwd }), ...(fd3Args ? { fd3Args } : {}) };
}
