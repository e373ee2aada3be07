import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawnDetached } from '../../lib/exec.js';
import { SECRET_FILES_SUBDIR, type InstanceHandle, type InstanceSpec, type ServiceDisks } from '../types.js';
import type { Cgroups } from './cgroups.js';
import { openWayTo, type AppUser } from './host-paths.js';
import { readStat } from './proc.js';
import type { Attachment, Networks } from './network/index.js';
import { sandboxedCommand, type SandboxPolicy } from './sandbox.js';
import { ensureSecretsMountPoint, rootSecretBinds, writeSecretFiles } from './secret-files.js';
import type { StartupBoosts } from './startup-boost.js';
import type { Toolchain } from './toolchain.js';
import type { Logger } from '../../lib/logger.js';
import type { PodmanEngine } from '../containers/engine.js';
import type { ContainerDisks } from './container-disks.js';
import { startContainer, watchExit } from './containers.js';

export interface LocalDeps {
  policy: SandboxPolicy;
  cgroups: Cgroups | undefined;
  log: Pick<Logger, 'info' | 'warn'> | undefined;
  /** Namespaces, when this machine can make them; undefined: the shared network. */
  networks: { networks: Networks; nsenterPath: string } | undefined;
  /** Set when apps run as another user without bwrap, so open their files on the host by path (host-paths.ts). */
  hostFiles?: { dataDir: string; user: AppUser };
  /** yarn and pnpm for builds and instances (toolchain.ts); undefined: this Node has no Corepack. */
  toolchain?: Toolchain;
  /** Dirs every build and instance reads (the Node.js releases deploys ask for), bound read-only. */
  toolDirs?: string[];
  /** Instances start with more CPU until they are up (startup-boost.ts); undefined: at their plan's from the start. */
  boosts?: StartupBoosts;
  /** The container engine, where installed (containers.ts). */
  containers?: PodmanEngine;
  /** The seccomp filter as an OCI profile file, for containers (seccomp.ts seccompProfile). */
  seccompProfile?: string;
  /** Each service's container storage on a sized disk of its own (container-disks.ts). */
  containerDisks?: ContainerDisks;
  /** Services' persistent disks (service-disks.ts), where instances can bind one. */
  serviceDisks?: ServiceDisks;
}

/**
 * A build's or an instance's environment with yarn and pnpm (Corepack's shims) first on its PATH, and Corepack's
 * settings unless `env` sets its own.
 */
export function withToolchain(deps: LocalDeps, env: Record<string, string>): Record<string, string> {
  const tools = deps.toolchain;
  if (!tools) return env;
  return { ...tools.env, ...env, PATH: [tools.binDir, env.PATH].filter(Boolean).join(':') };
}

/** What a build or an instance reads besides its own files: the shims and the Node.js releases. */
export const toolReadOnlyDirs = (deps: LocalDeps): string[] => [
  ...(deps.toolchain ? [deps.toolchain.binDir] : []),
  ...(deps.toolDirs ?? []),
];

/** Hands a dir the app must write to the user it runs as. Never follows symlinks. */
export function giveTo(dir: string, runAs: SandboxPolicy['runAs']): void {
  if (runAs) chownSync(dir, runAs.uid, runAs.gid);
}

/** cwd inside the app dir; a workDir escaping it (../) is refused. */
function appCwd(appDir: string, workDir: string): string {
  const cwd = path.resolve(appDir, workDir);
  if (cwd !== path.resolve(appDir) && !cwd.startsWith(path.resolve(appDir) + path.sep))
    throw new Error(`workDir ${JSON.stringify(workDir)} is outside the app dir`);
  return cwd;
}

/**
 * Starts an instance detached from Slipway and returns as soon as it exists (health is waitHealthy's job).
 * Only instanceDir/home (the app's HOME unless env sets one), scratchDirs and writableDirs are writable by the app: the rest
 * of instanceDir (logs, instance.json) is Slipway's and stays out of the sandbox, so the app cannot tamper with them.
 */
export async function startInstance(deps: LocalDeps, spec: InstanceSpec): Promise<InstanceHandle> {
  const { policy, cgroups, log } = deps;
  const cwd = appCwd(spec.sandbox.appDir, spec.sandbox.workDir);
  const home = path.join(spec.instanceDir, 'home');
  // HOME and the scratch dirs are sandbox-private tmpfs under bwrap (sized, never the host's disk); host dirs without.
  const scratchDirs = [home, ...(spec.sandbox.scratchDirs ?? [])];
  const { writableDirs } = spec.sandbox;
  for (const dir of [...scratchDirs, ...writableDirs]) {
    mkdirSync(dir, { recursive: true });
    giveTo(dir, policy.runAs);
  }
  const { hostFiles } = deps;
  if (hostFiles)
    openWayTo(
      hostFiles.dataDir,
      [spec.sandbox.appDir, cwd, ...scratchDirs, ...writableDirs, ...toolReadOnlyDirs(deps)],
      hostFiles.user,
    );
  const stdoutPath = path.join(spec.instanceDir, 'stdout.log');
  const stderrPath = path.join(spec.instanceDir, 'stderr.log');

  const { boosts } = deps;
  const groupDirs = cgroups?.create(spec.instanceId, boosts?.boosted(spec.limits) ?? spec.limits) ?? [];
  boosts?.begin(spec.instanceId, groupDirs, spec.limits.cpuMillicores);
  const removeGroup = async () => {
    boosts?.settle(spec.instanceId);
    const left = (await cgroups?.remove(groupDirs)) ?? [];
    if (left.length > 0)
      log?.warn({ instanceId: spec.instanceId, cgroups: left }, 'could not remove the cgroups of an exited instance');
  };
  let attached: Attachment | undefined;
  let pid: number;
  let startTime: string | undefined;
  const exited = () => {
    spec.onExit?.();
    void removeGroup();
  };
  try {
    attached =
      deps.networks && spec.network
        ? await deps.networks.networks.attach(spec.instanceId, spec.network.workspaceId, spec.network.hostnames)
        : undefined;
    const { container } = spec;
    if (spec.disk) {
      if (!deps.serviceDisks) throw new Error('this instance cannot bind a disk here');
      await deps.serviceDisks.mount(spec.disk);
    }
    if (container) {
      if (!deps.containers) throw new Error('no container engine on this machine');
      const files = { attached, groupDirs, stdoutPath, stderrPath };
      const engine = {
        engine: deps.containers,
        runAs: deps.policy.runAs,
        seccompProfile: deps.seccompProfile,
        disks: deps.containerDisks,
      };
      ({ pid, startTime } = await startContainer(engine, { ...spec, container }, files));
      watchExit({ instanceId: spec.instanceId, pid, startTime }, exited);
    } else {
      const secretsDir = nativeSecrets(deps, spec);
      const command = commandFor(deps, spec, { home, cwd, writableDirs, scratchDirs, groupDirs, attached, secretsDir });
      pid = await spawnDetached(command, { stdoutPath, stderrPath }, exited);
    }
  } catch (err) {
    // Nothing of a start that failed is left: not its cgroup, not its namespace (a cron job would leak one per tick).
    await removeGroup();
    if (attached) await deps.networks!.networks.release(spec.instanceId);
    throw err;
  }
  // Readable even if it already exited: Node reaps children only when the event loop next polls, after this code.
  startTime ??= readStat(pid)?.startTime ?? '';
  const startedAt = new Date();
  writeFileSync(path.join(spec.instanceDir, 'instance.json'), JSON.stringify({ pid, startTime, startedAt }) + '\n');
  return {
    instanceId: spec.instanceId,
    pid,
    startTime,
    startedAt,
    address: attached?.address ?? '127.0.0.1',
    stdoutPath,
    stderrPath,
  };
}

/**
 * A native instance's secret files, bound at /etc/secrets by bwrap. Without bwrap there is nowhere private to put
 * them: none are written (docs/deploys.md, "Secret files").
 */
function nativeSecrets(deps: LocalDeps, spec: InstanceSpec): string | undefined {
  if (!deps.policy.bwrap) return undefined;
  if (spec.secretFiles?.length) ensureSecretsMountPoint();
  return writeSecretFiles(path.join(spec.instanceDir, SECRET_FILES_SUBDIR), spec.secretFiles, deps.policy.runAs);
}

/** The sandboxed command line of an instance: its dirs, limits, cgroups and namespace. */
function commandFor(
  deps: LocalDeps,
  spec: InstanceSpec,
  at: {
    home: string;
    cwd: string;
    writableDirs: string[];
    scratchDirs: string[];
    groupDirs: string[];
    attached: Attachment | undefined;
    secretsDir: string | undefined;
  },
) {
  const { home, cwd, writableDirs, scratchDirs, groupDirs, attached, secretsDir } = at;
  const rootSecrets = rootSecretBinds(secretsDir, cwd, spec.sandbox.appDir);
  return sandboxedCommand(deps.policy, {
    kind: 'instance',
    command: spec.command,
    // yarn and pnpm at run time too: a start command such as `cd backend && yarn start` finds them, as on Render.
    env: withToolchain(deps, { HOME: home, ...spec.env }),
    cwd,
    readOnlyDirs: [spec.sandbox.appDir, ...toolReadOnlyDirs(deps)],
    writableDirs,
    scratchDirs,
    diskBytes: spec.limits.diskMb * 1024 * 1024,
    cgroupProcsFiles: groupDirs.map((dir) => path.join(dir, 'cgroup.procs')),
    secretsDir,
    rootSecretBinds: rootSecrets,
    binds: spec.disk ? [[spec.disk.dir, spec.disk.mountPath]] : [],
    network: attached && {
      nsenterPath: deps.networks!.nsenterPath,
      netnsPath: attached.netnsPath,
      ...(deps.policy.bwrap ? { hostsFile: attached.hostsFile, resolvConf: attached.resolvConf } : {}),
    },
  });
}
