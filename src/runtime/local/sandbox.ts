import { shellQuote, type Command } from '../../lib/exec.js';
import { SECRETS_MOUNT } from './secret-files.js';

/** How apps and builds are wrapped on this machine; decided once by detectCapabilities. */
export interface SandboxPolicy {
  bwrap?: {
    path: string;
    /** Read-only system mounts (/usr, /bin, /etc, node's install dir, ...) as bwrap arguments. */
    systemMounts: string[];
    /** bwrap ≥ 0.7 can size a tmpfs (--size): /tmp and scratch dirs get SandboxedProcess.diskBytes each. */
    tmpfsSize?: boolean;
    /** The compiled seccomp filter (seccomp.ts), handed to bwrap on fd 4 (--seccomp 4). */
    seccomp?: Buffer;
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
  /** Host dirs bound read-write: what is written there lands on the host's disk. */
  writableDirs: string[];
  /** With bwrap: writable dirs private to the sandbox (tmpfs, empty at start, owned by the app user), like /tmp. */
  scratchDirs?: string[];
  /**
   * Writable dirs whose whole tree becomes the app user's before the command runs (a build's source, unpacked by
   * root): changed inside the sandbox, so only what it binds can be reached, and under its cgroups.
   */
  ownedTrees?: string[];
  /** With bwrap ≥ 0.7: the size of /tmp and of each scratch dir, so filling one ends in ENOSPC. */
  diskBytes?: number;
  /** cgroup.procs files to join before any of the command runs, so nothing it forks escapes the limits. */
  cgroupProcsFiles: string[];
  /** The network namespace to run in (entered with nsenter, before bwrap), and the hosts file its workspace sees. */
  network?: { nsenterPath: string; netnsPath: string; hostsFile?: string; resolvConf?: string };
  /** With bwrap: a dir of secret files, bound read-only at /etc/secrets (secret-files.ts). */
  secretsDir?: string;
  /** With bwrap: secret files bound read-only in the app's root dir too, as [file, mount point] (rootSecretBinds). */
  rootSecretBinds?: [string, string][];
  /** With bwrap: host dirs bound read-write elsewhere than their own path, as [dir, mount point] (a service's disk). */
  binds?: [string, string][];
}

/** Re-exported: the sandbox's callers quote with it. */
export { shellQuote };

/** A name a shell can export: Slipway's own and every key the API accepts (core/services/env-vars.ts) are. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The app's environment as shell code, read on fd 3 by the app user's shell (ENV_FROM_FD3). What runs before that
 * shell runs as root (the chown of the app's files, setpriv) and starts with no environment at all: the tenant's PATH
 * or LD_PRELOAD would otherwise choose what root runs. A name no shell can hold is left out.
 */
export const envScript = (env: Record<string, string>): string =>
  Object.entries(env)
    .filter(([name]) => SHELL_NAME.test(name))
    .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
    .join('');

/** Sets the environment from fd 3 (envScript): read, not opened by path, since the pipe is root's and this shell is not. */
export const ENV_FROM_FD3 = 'eval "$(/bin/cat <&3)"';

/**
 * Inside bwrap's pid namespace the command runs under this shell (as the app user). When the command exits on its
 * own, it kills whatever the command left behind (kill -1 reaches only this namespace), so an instance ends with its
 * main process, like a container. During a stop (SIGTERM) it instead waits for the rest of the sandbox to exit,
 * keeping bwrap, and so the instance's pid, alive until the app is really gone. Its trap has a handler rather
 * than '' so that the command does not inherit an ignored SIGTERM.
 *
 * This shell's own stderr is /dev/null: it reports a foreground command ended by a signal, and when Slipway stops
 * the app that report ("Terminated") landed in the app's log as an error. dash writes it to the stderr it has while
 * it waits, which for a command with a redirection of its own (`cmd 2>&3`) is the command's, so the command gets the
 * sandbox's stderr (fd 3 here) from inside its child (`exec 2>&3`). A command killed by a signal that Slipway did not
 * send (the OOM killer's SIGKILL, a segfault) is reported in a line of our own, `slipway: killed by SIGKILL` (after
 * the `Killed` of a shell the command itself runs in, if it does not exec its app).
 */
export const REAPER_SCRIPT = [
  ENV_FROM_FD3,
  'exec 3>&2 2>/dev/null',
  'stopping=', // not the app's env var of that name
  'trap stopping=1 TERM INT HUP',
  // A stop that came before the command started (a job canceled at once) ends the sandbox here: the command, not yet
  // spawned, would miss Slipway's one SIGTERM and run out the whole grace.
  'if [ -n "$stopping" ]; then exit 143; fi',
  `/bin/sh -c 'exec 2>&3 3>&-; exec /bin/sh -c "$1"' slipway-app "$1"`,
  'code=$?',
  'if [ -n "$stopping" ]; then while kill -0 -1; do sleep 0.1; done; else kill -KILL -1; ' +
    'if [ "$code" -gt 128 ] && sig=$(kill -l "$code"); then echo "slipway: killed by SIG$sig" >&3; fi; fi',
  'exit "$code"',
].join('; ');

/** Joins the cgroups as root, then becomes the real command ("$@") in the same process. */
export function cgroupJoinScript(procsFiles: string[]): string {
  const files = procsFiles.map(shellQuote).join(' ');
  return `for f in ${files}; do echo $$ > "$f" || { echo "slipway: cannot join cgroup $f" >&2; exit 125; }; done; exec "$@"`;
}

/**
 * Hands the app user its trees (`chown -R -h`: links themselves, never what they point to) and the scratch dirs (tmpfs
 * mounted by bwrap as root), then becomes the command ("$@").
 */
export function ownerScript(uid: number, gid: number, owned: { trees: string[]; dirs: string[] }): string {
  const owner = `${uid}:${gid}`;
  const steps = [
    ...(owned.trees.length > 0 ? [`/bin/chown -R -h ${owner} -- ${owned.trees.map(shellQuote).join(' ')}`] : []),
    ...(owned.dirs.length > 0 ? [`/bin/chown ${owner} -- ${owned.dirs.map(shellQuote).join(' ')}`] : []),
  ];
  return `${steps.join(' && ')} || { echo "slipway: could not hand its files to the app user" >&2; exit 125; }; exec "$@"`;
}

/** Binds a dir at its own path. bwrap would create missing parents 0700 (root's), which the app user cannot traverse. */
const bindAt = (flag: '--ro-bind' | '--bind', dir: string) => ['--perms', '0755', '--dir', dir, flag, dir, dir];

/** The Command that runs `proc` under `policy`: [cgroup join] → [nsenter] → [bwrap] → [chown] → [setpriv] → [reaper] → sh -c command. */
export function sandboxedCommand(policy: SandboxPolicy, proc: SandboxedProcess): Command {
  const { bwrap, runAs } = policy;
  const scratchDirs = proc.scratchDirs ?? [];
  // Sized where bwrap can (otherwise bounded only by the memory limit, which tmpfs pages count against).
  const tmpfs = (perms: string, dir: string) => [
    '--perms',
    perms,
    ...(bwrap?.tmpfsSize && proc.diskBytes ? ['--size', String(proc.diskBytes)] : []),
    '--tmpfs',
    dir,
  ];
  // The environment comes on fd 3 wherever a stage runs as root before the app (envScript).
  const envOnFd3 = !!bwrap || !!runAs;
  let argv = bwrap
    ? ['/bin/sh', '-c', REAPER_SCRIPT, 'slipway-app', proc.command]
    : runAs
      ? ['/bin/sh', '-c', `${ENV_FROM_FD3}; exec 3<&-; exec /bin/sh -c "$1"`, 'slipway-app', proc.command]
      : ['/bin/sh', '-c', proc.command];
  if (runAs) {
    argv = [
      runAs.setprivPath,
      `--reuid=${runAs.uid}`,
      `--regid=${runAs.gid}`,
      '--clear-groups',
      '--no-new-privs',
      '--',
      ...argv,
    ];
    const owned = { trees: proc.ownedTrees ?? [], dirs: bwrap ? scratchDirs : [] };
    if (owned.trees.length + owned.dirs.length > 0)
      argv = ['/bin/sh', '-c', ownerScript(runAs.uid, runAs.gid, owned), 'slipway-owner', ...argv];
  }
  const env = envOnFd3 ? {} : proc.env;
  let cwd: string | undefined = proc.cwd;
  if (bwrap) {
    argv = [
      bwrap.path,
      ...(proc.kind === 'build' ? ['--die-with-parent'] : []),
      ...bwrap.systemMounts,
      ...(proc.network?.hostsFile ? ['--ro-bind', proc.network.hostsFile, '/etc/hosts'] : []),
      ...(proc.network?.resolvConf ? ['--ro-bind', proc.network.resolvConf, '/etc/resolv.conf'] : []),
      ...(proc.secretsDir ? ['--ro-bind', proc.secretsDir, SECRETS_MOUNT] : []),
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      ...tmpfs('1777', '/tmp'),
      ...scratchDirs.flatMap((dir) => ['--perms', '0755', '--dir', dir, ...tmpfs('0700', dir)]),
      ...proc.readOnlyDirs.flatMap((dir) => bindAt('--ro-bind', dir)),
      ...proc.writableDirs.flatMap((dir) => bindAt('--bind', dir)),
      // After the app dir's bind, over it.
      ...(proc.rootSecretBinds ?? []).flatMap(([file, at]) => ['--ro-bind', file, at]),
      // A service's disk, at its mountPath (core/disks.ts checks the path).
      ...(proc.binds ?? []).flatMap(([dir, at]) => ['--perms', '0755', '--dir', at, '--bind', dir, at]),
      // No --new-session: Slipway already starts every sandbox in a session of its own without a terminal (setsid),
      // and a second one inside would take the app out of the process group, so kill(-pid) would miss it.
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--chdir',
      proc.cwd,
      '--clearenv',
      // Loaded by bwrap after its own setup, so it may still mount and unshare; it binds everything after.
      ...(bwrap.seccomp ? ['--seccomp', '4'] : []),
      '--',
      ...argv,
    ];
    cwd = undefined; // set inside (--chdir)
  }
  if (proc.network) argv = [proc.network.nsenterPath, `--net=${proc.network.netnsPath}`, '--', ...argv];
  if (proc.cgroupProcsFiles.length > 0) {
    argv = ['/bin/sh', '-c', cgroupJoinScript(proc.cgroupProcsFiles), 'slipway-cgroup-join', ...argv];
  }
  const [file, ...args] = argv as [string, ...string[]];
  const fd4Data = bwrap?.seccomp;
  return {
    file,
    args,
    env,
    ...(cwd === undefined ? {} : { cwd }),
    // The environment (secrets included) comes through fd 3, not the command line.
    ...(envOnFd3 ? { fd3Data: envScript(proc.env) } : {}),
    ...(fd4Data ? { fd4Data } : {}),
  };
}
