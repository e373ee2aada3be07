import { existsSync, lstatSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { run } from '../../lib/exec.js';
import type { RuntimeCapabilities } from '../types.js';
import { detectCgroups, type Cgroups } from './cgroups.js';
import { sandboxedCommand, type SandboxPolicy } from './sandbox.js';
import { detectSandboxLimits } from './sandbox-limits.js';

export interface Detected {
  capabilities: RuntimeCapabilities;
  policy: SandboxPolicy;
  cgroups: Cgroups | undefined;
}

const NOBODY = 'nobody';
export const findProgram = (name: string) =>
  ['/usr/bin', '/bin', '/usr/sbin', '/sbin'].map((dir) => path.join(dir, name)).find((file) => existsSync(file));

function lookupUser(name: string): { uid: number; gid: number } | undefined {
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

/** Decides, once, how apps are isolated here; every protection that cannot be applied is explained in `notes`. */
export async function detectCapabilities(dataDir: string): Promise<Detected> {
  const notes: string[] = [];
  const { policy: runAs, user } = runAsUser(notes);
  const policy: SandboxPolicy = { runAs };

  const bwrapPath = findProgram('bwrap');
  if (!bwrapPath)
    notes.push('bwrap (bubblewrap) was not found: apps are not isolated from the filesystem or from each other');
  else {
    const candidate: SandboxPolicy = { ...policy, bwrap: { path: bwrapPath, systemMounts: systemMounts() } };
    const failure = await bwrapWorks(candidate).catch((err: Error) => err.message);
    if (failure)
      notes.push(
        `bwrap does not work here, so apps are not isolated from the filesystem or from each other: ${failure}`,
      );
    else policy.bwrap = { ...candidate.bwrap!, ...(await detectSandboxLimits(candidate, notes)) };
  }
  if (policy.bwrap) {
    notes.push('/etc is visible read-only inside the sandbox (DNS, TLS certificates and user names need it)');
  } else if (runAs) {
    // Without mount isolation the app user reaches its files through the data dir's own permissions.
    const mode = statSync(dataDir, { throwIfNoEntry: false })?.mode ?? 0;
    if ((mode & 0o001) === 0)
      notes.push(
        `apps run as ${NOBODY} without bwrap and cannot reach their files under the data dir ${dataDir}: chmod 711 it`,
      );
    if ((mode & 0o004) !== 0)
      notes.push(
        `the data dir ${dataDir} is listable by other users, so apps can look for other services' files: chmod 711 it`,
      );
  }
  if (!policy.bwrap)
    notes.push(
      'writable disk is not size-limited and no seccomp filter is applied: without bwrap, apps write to host dirs and may use every syscall',
    );

  const cgroups = await detectCgroups(notes);
  return {
    // The network is decided by createLocalRuntime (src/runtime/local/index.ts), which needs the config.
    capabilities: {
      sandbox: policy.bwrap ? 'bwrap' : 'none',
      runAsUser: user,
      cgroups: cgroups?.version ?? 'none',
      network: 'shared',
      notes,
      limits: {
        memory: !!cgroups?.has('memory'),
        cpu: !!cgroups?.has('cpu'),
        pids: !!cgroups?.has('pids'),
        disk: !!policy.bwrap?.tmpfsSize,
        seccomp: !!policy.bwrap?.seccomp,
      },
    },
    policy,
    cgroups,
  };
}
