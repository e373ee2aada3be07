import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { run, type Command, type RunResult } from '../../lib/exec.js';
import type { Limits } from '../../model/limits.js';
import type { BuildSpec, SecretFileSpec, ToolSpec } from '../types.js';
import { findProgram } from './capabilities.js';
import { oomKilled } from './cgroups.js';
import { openWayTo } from './host-paths.js';
import { giveTo, toolReadOnlyDirs, withToolchain, type LocalDeps } from './instances.js';
import { sandboxedCommand, shellQuote } from './sandbox.js';
import { ensureSecretsMountPoint, writeSecretFiles } from './secret-files.js';

/** A build's namespace: on its workspace's network when asked (with its hosts file), else with only a way out. */
async function attachNetwork(deps: LocalDeps, name: string, network: BuildSpec['network']) {
  const networks = deps.networks?.networks;
  if (!networks) return undefined;
  if (!network) return networks.attachBuild();
  const attached = await networks.attach(name, network.workspaceId, []);
  return { ...attached, release: () => networks.release(name) };
}

/**
 * Without cgroups, builds and tools run below Slipway's CPU priority: on a busy machine a tenant's build slows down
 * before the API's requests do (`nice` execs the sandbox, so its pid and process group stay the ones `run` stops).
 */
const BUILD_NICE = 10;
const nicePath = findProgram('nice');
const niced = (cmd: Command): Command =>
  nicePath ? { ...cmd, file: nicePath, args: ['-n', String(BUILD_NICE), cmd.file, ...cmd.args] } : cmd;

/** What runs in a build's sandbox: a build command, or a tool (git) run for a tenant. */
interface Job {
  command: string;
  env: Record<string, string>;
  cwd: string;
  /** Handed to the app user (the whole tree when `giveTree`) and bound read-write. */
  writableDirs: string[];
  readOnlyDirs: string[];
  /** HOME: a host dir on the build disk, or a private tmpfs. */
  home: { dir: string } | 'tmpfs';
  giveTree?: string;
  limits: Limits;
  network?: BuildSpec['network'];
  timeoutMs: number;
  idleTimeoutMs?: number;
  signal?: AbortSignal;
  onOutput?(chunk: string): void;
  maxOutputBytes?: number;
  secretFiles?: SecretFileSpec[];
}

/**
 * Runs a job sandboxed like an instance, in a network namespace of its own (the builds' egress rules) with its
 * cgroups; the sandbox dies with Slipway, and with the job on timeout.
 */
async function runJob(deps: LocalDeps, job: Job): Promise<RunResult> {
  const { policy, cgroups, log } = deps;
  const name = `build-${randomBytes(6).toString('hex')}`;
  const groupDirs = cgroups?.create(name, job.limits, { background: true }) ?? [];
  // Without bwrap there is no private tmpfs: a throwaway dir under the system tmp dir (the app user reaches it by path).
  const tmpHome =
    job.home === 'tmpfs' && !policy.bwrap ? mkdtempSync(path.join(tmpdir(), `slipway-${name}-`)) : undefined;
  const home = job.home === 'tmpfs' ? (tmpHome ?? `/tmp/${name}-home`) : job.home.dir;
  let network: { netnsPath: string; hostsFile?: string; resolvConf: string; release(): Promise<void> } | undefined;
  // Secret files need bwrap's private /etc/secrets; the dir is root's, the files the app user's (secret-files.ts).
  const secretsHome =
    policy.bwrap && job.secretFiles?.length ? mkdtempSync(path.join(tmpdir(), `${name}-`)) : undefined;
  try {
    if (secretsHome) ensureSecretsMountPoint();
    const secretsDir =
      secretsHome && writeSecretFiles(path.join(secretsHome, 'secrets'), job.secretFiles, policy.runAs);
    network = await attachNetwork(deps, name, job.network);
    const writableDirs = [...job.writableDirs, ...(job.home === 'tmpfs' ? [] : [home]), ...(tmpHome ? [tmpHome] : [])];
    for (const dir of writableDirs) {
      mkdirSync(dir, { recursive: true });
      giveTo(dir, policy.runAs);
    }
    const readOnlyDirs = [...toolReadOnlyDirs(deps), ...job.readOnlyDirs];
    if (deps.hostFiles) openWayTo(deps.hostFiles.dataDir, [...writableDirs, ...readOnlyDirs], deps.hostFiles.user);
    const env = withToolchain(deps, { HOME: home, ...job.env });
    const command = sandboxedCommand(policy, {
      kind: 'build',
      command: job.command,
      env,
      cwd: job.cwd,
      readOnlyDirs,
      writableDirs,
      scratchDirs: job.home === 'tmpfs' && policy.bwrap ? [home] : [],
      ownedTrees: job.giveTree ? [job.giveTree] : [],
      diskBytes: job.limits.diskMb * 1024 * 1024, // /tmp (and a tmpfs HOME)
      cgroupProcsFiles: groupDirs.map((dir) => path.join(dir, 'cgroup.procs')),
      secretsDir,
      network: network && {
        nsenterPath: deps.networks!.nsenterPath,
        netnsPath: network.netnsPath,
        ...(policy.bwrap ? { hostsFile: network.hostsFile, resolvConf: network.resolvConf } : {}),
      },
    });
    // The group's CPU weight already puts the job behind the API and the apps; nice only where there is none.
    const result = await run(cgroups?.has('cpu') ? command : niced(command), {
      timeoutMs: job.timeoutMs,
      idleTimeoutMs: job.idleTimeoutMs,
      signal: job.signal,
      onOutput: job.onOutput,
      maxOutputBytes: job.maxOutputBytes,
    });
    // Read now: the group goes below. A shell reports its child's SIGKILL as 137.
    return oomKilled(groupDirs, result.exitCode === 137 || result.signal === 'SIGKILL')
      ? { ...result, oomKilled: true }
      : result;
  } finally {
    await network?.release();
    if (tmpHome) rmSync(tmpHome, { recursive: true, force: true });
    if (secretsHome) rmSync(secretsHome, { recursive: true, force: true });
    const left = (await cgroups?.remove(groupDirs)) ?? [];
    if (left.length > 0) log?.warn({ cgroups: left }, 'could not remove the cgroups of a finished build');
  }
}

/**
 * A build command: the build dir (handed to the app user), its HOME and the cache dir writable; yarn and pnpm come
 * first on its PATH (toolchain.ts).
 */
export function runBuild(deps: LocalDeps, spec: BuildSpec): Promise<RunResult> {
  // Under the system tmp dir rather than the data dir: without bwrap the app user must still reach it by path.
  const throwaway = spec.homeDir ? undefined : mkdtempSync(path.join(tmpdir(), 'slipway-build-home-'));
  return runJob(deps, {
    command: spec.command,
    env: spec.env,
    cwd: spec.dir,
    writableDirs: [spec.dir, ...(spec.cacheDir ? [spec.cacheDir] : [])],
    readOnlyDirs: [],
    home: { dir: spec.homeDir ?? throwaway! },
    giveTree: spec.dir,
    limits: spec.limits,
    network: spec.network,
    timeoutMs: spec.timeoutMs,
    signal: spec.signal,
    onOutput: spec.onOutput,
    secretFiles: spec.secretFiles,
  }).finally(() => throwaway && rmSync(throwaway, { recursive: true, force: true }));
}

/** A tool (git) as a build runs: `exec`'d from the sandbox's shell, its arguments quoted, its environment given inside. */
export function runTool(deps: LocalDeps, spec: ToolSpec): Promise<RunResult> {
  const { command } = spec;
  return runJob(deps, {
    command: `exec ${[command.file, ...command.args].map(shellQuote).join(' ')}`,
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...command.env },
    cwd: spec.cwd,
    writableDirs: spec.writableDirs,
    readOnlyDirs: spec.readOnlyDirs ?? [],
    home: 'tmpfs',
    limits: spec.limits,
    timeoutMs: spec.timeoutMs,
    idleTimeoutMs: spec.idleTimeoutMs,
    signal: spec.signal,
    maxOutputBytes: spec.maxOutputBytes,
  });
}
