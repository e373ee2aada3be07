import { existsSync, lstatSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { run } from '../../lib/exec.js';
import type { RuntimeCapabilities } from '../types.js';
import type { Cgroups } from './cgroups.js';
import { detectCgroups } from './cgroups-detect.js';
import { BWRAP_INSTALL, dataDirUnreachable } from './host-paths.js';
import { sandboxedCommand, type SandboxPolicy } from './sandbox.js';
import { detectSandboxLimits } from './sandbox-limits.js';

export interface Detected {
  capabilities: RuntimeCapabilities;
  policy: SandboxPolicy;
  cgroups: Cgroups | undefined;
}

export const NOBODY = 'nobody';
export const findProgram = (name: string) =>
  ['/usr/bin', '/bin', '/usr/sbin', '/sbin'].map((dir) => path.join(dir, name)).find((file) => existsSync(file));

export function lookupUser(name: string): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  const [, , uid, gid] = line?.split(':') ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : undefined;
}

/** The read-only system part of the sandbox: /usr, the /bin and /lib dirs (or their symlinks into /usr), /etc, node. */
function systemMounts(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const dir of ['/bin', '/lib', '/lib64']) {
    const stat = lstatSync(dir, { throwIfNoEntry: false });
    if (stat?.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (stat?.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  args.push('--ro-bind', '/etc', '/etc');
  // resolv.conf is often a symlink into /run (systemd-resolved); DNS needs its target.
  const resolv = existsSync('/etc/resolv.conf') ? realpathSync('/etc/resolv.conf') : undefined;
  if (resolv && !resolv.startsWith('/etc/') && !resolv.startsWith('/usr/')) args.push('--ro-bind', resolv, resolv);
  // A node installed outside /usr (nvm, tarball): its whole prefix, so npm/npx next to it work too.
  const nodeBin = path.dirname(realpathSync(process.execPath));
  const nodePrefix = path.basename(nodeBin) === 'bin' ? path.dirname(nodeBin) : nodeBin;
  if (!nodeBin.startsWith('/usr/')) args.push('--ro-bind', nodePrefix, nodePrefix);
  return args;
}

function runAsUser(notes: string[]): { policy: SandboxPolicy['runAs']; user: RuntimeCapabilities['runAsUser'] } {
  const uid = process.getuid?.();
  if (uid !== 0) {
    notes.push(
      `Slipway is not running as root (uid ${uid}): apps run as Slipway's own user and can read what it can outside the sandbox`,
    );
    return { policy: undefined, user: undefined };
  }
  const nobody = lookupUser(NOBODY);
  const setprivPath = findProgram('setpriv');
  if (!nobody || !setprivPath) {
    notes.push(
      `apps run as root: ${nobody ? 'setpriv (util-linux) was not found' : `user "${NOBODY}" does not exist`}`,
    );
    return { policy: undefined, user: undefined };
  }
  return { policy: { setprivPath, ...nobody }, user: { ...nobody, name: NOBODY } };
}

/** Runs the real wrapping once, so a bwrap that exists but cannot work here (no namespaces, old version) is caught. */
async function bwrapWorks(policy: SandboxPolicy): Promise<string | undefined> {
  const basic = await run(
    { file: policy.bwrap?.path ?? 'bwrap', args: ['--ro-bind', '/', '/', 'true'], env: {} },
    { timeoutMs: 10_000 },
  );
  if (basic.exitCode !== 0)
    return `\`bwrap --ro-bind / / true\` failed: ${basic.output.trim() || `exit ${basic.exitCode}`}`;
  const probe = sandboxedCommand(policy, {
    kind: 'build',
    command: 'true',
    env: {},
    cwd: '/',
    readOnlyDirs: [],
    writableDirs: [],
    cgroupProcsFiles: [],
  });
  const real = await run(probe, { timeoutMs: 10_000 });
  return real.exitCode === 0
    ? undefined
    : `a sandboxed test command failed: ${real.output.trim() || `exit ${real.exitCode}`}`;
}

export type SandboxMode = 'auto' | 'bwrap' | 'off';

/** bwrap when asked for and working; otherwise why not (SLIPWAY_SANDBOX=bwrap makes that an error). */
async function chooseSandbox(mode: SandboxMode, policy: SandboxPolicy, notes: string[]): Promise<string | undefined> {
  if (mode === 'off') return 'it is turned off (SLIPWAY_SANDBOX=off)';
  const bwrapPath = findProgram('bwrap');
  const candidate: SandboxPolicy = {
    ...policy,
    bwrap: bwrapPath ? { path: bwrapPath, systemMounts: systemMounts() } : undefined,
  };
  const failure = !bwrapPath
    ? 'bwrap was not found'
    : await bwrapWorks(candidate).then(
        (why) => why && `bwrap does not work here: ${why}`,
        (err: Error) => `bwrap does not work here: ${err.message}`,
      );
  if (failure && mode === 'bwrap') throw new Error(`SLIPWAY_SANDBOX=bwrap, but ${failure} (${BWRAP_INSTALL})`);
  if (failure) return failure;
  policy.bwrap = { ...candidate.bwrap!, ...(await detectSandboxLimits(candidate, notes)) };
  return undefined;
}

/**
 * The one warning of a machine without the sandbox: what apps can reach of each other (everything their user can) and
 * what they cannot (Slipway's secrets: src/core/service-state/layout.ts closes the data dir), and how to get the sandbox.
 */
function unsandboxedWarning(why: string, user: RuntimeCapabilities['runAsUser']): string {
  const who = user
    ? `They all run as ${user.name}, as do local datastore servers, so any app can read and change the others' files, read their environment variables (secrets included), signal their processes, and read every local datastore's data; none can read Slipway's store, secret key or uploads (the data dir is open to ${user.name} only along the way to each app's own files).`
    : "They run as Slipway's own user, so any app can read everything Slipway can: its store, its secret key, every app's files and environment.";
  return `apps are not isolated from each other: no bubblewrap sandbox (${why}; install it: ${BWRAP_INSTALL}). ${who} Their writable disk is not size-limited and no seccomp filter applies.`;
}

/** Decides, once, how apps are isolated here; every protection that cannot be applied is explained in `notes`. */
export async function detectCapabilities(dataDir: string, mode: SandboxMode = 'auto'): Promise<Detected> {
  const notes: string[] = [];
  const { policy: runAs, user } = runAsUser(notes);
  const policy: SandboxPolicy = { runAs };
  const unsandboxed = await chooseSandbox(mode, policy, notes);
  if (unsandboxed) notes.unshift(unsandboxedWarning(unsandboxed, user));
  if (policy.bwrap)
    notes.push('/etc is visible read-only inside the sandbox (DNS, TLS certificates and user names need it)');
  else if (user) {
    const closed = dataDirUnreachable(dataDir, user);
    if (closed) notes.push(closed);
  }

  const cgroups = await detectCgroups(notes);
  return {
    // The network is decided by createLocalRuntime (src/runtime/local/index.ts), which needs the config.
    capabilities: {
      sandbox: policy.bwrap ? 'bwrap' : 'none',
      runAsUser: user,
      cgroups: cgroups?.version ?? 'none',
      network: 'shared',
      containers: { none: 'not probed' }, // decided by createLocalRuntime, like the network
      notes,
      limits: {
        memory: !!cgroups?.has('memory'),
        cpu: !!cgroups?.has('cpu'),
        pids: !!cgroups?.has('pids'),
        disk: !!policy.bwrap?.tmpfsSize,
        seccomp: !!policy.bwrap?.seccomp,
        buildDisk: false, // decided by createLocalRuntime, which probes a mount
      },
    },
    policy,
    cgroups,
  };
}
