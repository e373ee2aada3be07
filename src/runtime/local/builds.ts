import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { run, type RunResult } from '../../lib/exec.js';
import type { BuildSpec } from '../types.js';
import { oomKilled } from './cgroups.js';
import { openWayTo } from './host-paths.js';
import { giveTo, giveTreeCommand, type LocalDeps } from './instances.js';
import { sandboxedCommand } from './sandbox.js';

/** A build's namespace: on its workspace's network when asked (with its hosts file), else with only a way out. */
async function attachNetwork(deps: LocalDeps, name: string, spec: BuildSpec) {
  const networks = deps.networks?.networks;
  if (!networks) return undefined;
  if (!spec.network) return networks.attachBuild();
  const attached = await networks.attach(name, spec.network.workspaceId, []);
  return { ...attached, release: () => networks.release(name) };
}

/**
 * Runs a build command sandboxed like an instance, with the build dir and the cache dir writable (and handed to the
 * app user) and a throwaway HOME unless env sets one; yarn and pnpm come first on its PATH (toolchain.ts). The sandbox
 * dies with Slipway, and with the build on timeout.
 */
export async function runBuild(deps: LocalDeps, spec: BuildSpec): Promise<RunResult> {
  const { policy, cgroups, log } = deps;
  const name = `build-${randomBytes(6).toString('hex')}`;
  // Under the system tmp dir rather than the data dir: without bwrap the app user must still reach it by path.
  const home = mkdtempSync(path.join(tmpdir(), `slipway-${name}-`));
  const groupDirs = cgroups?.create(name, spec.limits) ?? [];
  let network: { netnsPath: string; hostsFile?: string; resolvConf: string; release(): Promise<void> } | undefined;
  try {
    network = await attachNetwork(deps, name, spec);
    if (policy.runAs) {
      const given = await run(giveTreeCommand(spec.dir, policy.runAs), {
        timeoutMs: spec.timeoutMs,
        signal: spec.signal,
      });
      if (given.exitCode !== 0) throw new Error(`could not hand the build dir to the app user: ${given.output.trim()}`);
    }
    giveTo(home, policy.runAs);
    const writableDirs = [spec.dir, home];
    if (spec.cacheDir) {
      mkdirSync(spec.cacheDir, { recursive: true });
      giveTo(spec.cacheDir, policy.runAs); // what is in it, its builds wrote as the app user
      writableDirs.push(spec.cacheDir);
    }
    const tools = deps.toolchain;
    const readOnlyDirs = tools ? [tools.binDir] : [];
    if (deps.hostFiles) openWayTo(deps.hostFiles.dataDir, [...writableDirs, ...readOnlyDirs], deps.hostFiles.user);
    const env: Record<string, string> = { ...tools?.env, HOME: home, ...spec.env };
    if (tools) env.PATH = [tools.binDir, env.PATH].filter(Boolean).join(':');
    const command = sandboxedCommand(policy, {
      kind: 'build',
      command: spec.command,
      env,
      cwd: spec.dir,
      readOnlyDirs,
      writableDirs,
      diskBytes: spec.limits.diskMb * 1024 * 1024, // /tmp only: the source dir and HOME are on the host's disk
      cgroupProcsFiles: groupDirs.map((dir) => path.join(dir, 'cgroup.procs')),
      network: network && {
        nsenterPath: deps.networks!.nsenterPath,
        netnsPath: network.netnsPath,
        ...(policy.bwrap ? { hostsFile: network.hostsFile, resolvConf: network.resolvConf } : {}),
      },
    });
    const result = await run(command, { timeoutMs: spec.timeoutMs, signal: spec.signal, onOutput: spec.onOutput });
    // Read now: the group goes below. A shell reports its child's SIGKILL as 137.
    return oomKilled(groupDirs, result.exitCode === 137 || result.signal === 'SIGKILL')
      ? { ...result, oomKilled: true }
      : result;
  } finally {
    await network?.release();
    rmSync(home, { recursive: true, force: true });
    const left = (await cgroups?.remove(groupDirs)) ?? [];
    if (left.length > 0) log?.warn({ cgroups: left }, 'could not remove the cgroups of a finished build');
  }
}
