import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from '../../lib/exec.js';
import { detectPodman, type PodmanEngine, type Place } from '../containers/engine.js';
import { randomBytes } from 'node:crypto';
import type { ContainerJobSpec, Containers, RuntimeCapabilities } from '../types.js';
import { diskImageOf } from './container-disks.js';
import { runContainerJob } from './containers.js';
import type { LocalDeps } from './instances.js';
import { seccompArch, seccompProfile } from './seccomp.js';

/**
 * The container engine where this machine has one (docs/containers.md, "The engine"): capabilities say which, or
 * why none. Returns the engine for instances and the seccomp profile file they load.
 */
export async function chooseContainers(
  options: { dataDir: string; insecureRegistries: string[]; off: boolean },
  capabilities: RuntimeCapabilities,
  seccomp: boolean,
): Promise<Pick<LocalDeps, 'containers' | 'seccompProfile'>> {
  const stateDir = path.join(options.dataDir, 'containers');
  if (options.off) {
    capabilities.containers = { none: 'turned off by SLIPWAY_CONTAINERS=off' };
    return {};
  }
  const found = await detectPodman({ stateDir, insecureRegistries: options.insecureRegistries });
  if (typeof found === 'string') {
    capabilities.containers = { none: found };
    return {};
  }
  capabilities.containers = { engine: found.engine.engine };
  const arch = seccompArch();
  if (!seccomp || !arch) return { containers: found.engine };
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const file = path.join(stateDir, 'seccomp.json');
  writeFileSync(file, seccompProfile(arch));
  return { containers: found.engine, seccompProfile: file };
}

/**
 * A one-off container in a group of its own (a build's weight and the job's limits), on its workspace's network: its
 * env file goes to `stateDir` (Slipway's, root-only) for the moment podman reads it.
 */
async function runJob(engine: PodmanEngine, deps: LocalDeps, stateDir: string, job: ContainerJobSpec) {
  const name = `job-${randomBytes(6).toString('hex')}`;
  const groupDirs = deps.cgroups?.create(name, job.limits, { background: true }) ?? [];
  const networks = deps.networks?.networks;
  try {
    const attached = networks && job.network ? await networks.attach(name, job.network.workspaceId, []) : undefined;
    const containerDeps = {
      engine,
      runAs: deps.policy.runAs,
      seccompProfile: deps.seccompProfile,
      disks: deps.containerDisks,
    };
    return await runContainerJob(containerDeps, job, { attached, groupDirs, dir: stateDir });
  } finally {
    if (networks && job.network) await networks.release(name);
    await deps.cgroups?.remove(groupDirs);
  }
}

/**
 * The build namespace's resolver over /etc/resolv.conf, in a mount namespace of the call's own: the host's may name a
 * server the namespace cannot reach (a loopback one, or one the egress rules refuse). Podman reads it for pulls, and
 * RUN steps get a copy of it.
 */
const withResolver = (resolvConf: string) => [
  ...[UNSHARE, '--mount', '--propagation', 'private', '--'],
  ...['/bin/sh', '-c', 'mount --bind "$0" /etc/resolv.conf && exec "$@"', resolvConf],
];
const UNSHARE = '/usr/bin/unshare';

/** Builds and pulls in a build namespace of their own (the builds' egress rules), never on the host's network. */
export function containersOf(engine: PodmanEngine, deps: LocalDeps, stateDir: string): Containers {
  async function inBuildNamespace<T>(fn: (place: Place) => Promise<T>): Promise<T> {
    const networks = deps.networks;
    if (!networks) return fn({ netnsPath: undefined });
    const ns = await networks.networks.attachBuild();
    const wrap = (cmd: Command): Command => ({
      ...cmd,
      file: networks.nsenterPath,
      args: [`--net=${ns.netnsPath}`, '--', ...withResolver(ns.resolvConf), cmd.file, ...cmd.args],
    });
    try {
      return await fn({ netnsPath: ns.netnsPath, wrap });
    } finally {
      await ns.release();
    }
  }
  // Every use of a storage mounts its disk first (container-disks.ts); only a build or a pull makes a new one.
  const disks = deps.containerDisks;
  const onDisk = async <T>(storageDir: string, fn: () => Promise<T>, make = true): Promise<T> => {
    if (make || existsSync(storageDir) || existsSync(diskImageOf(storageDir))) await disks?.ensure(storageDir);
    return fn();
  };
  return {
    engine: engine.engine,
    build: (spec) => onDisk(spec.storageDir, () => inBuildNamespace((place) => engine.build(spec, place))),
    pull: (spec) => onDisk(spec.storageDir, () => inBuildNamespace((place) => engine.pull(spec, place))),
    inspect: (storageDir, ref) => onDisk(storageDir, () => engine.inspect(storageDir, ref), false),
    removeImages: (storageDir, refs) => onDisk(storageDir, () => engine.removeImages(storageDir, refs), false),
    run: (job) => runJob(engine, deps, stateDir, job),
    releaseStorage: async (storageDir) => disks?.release(storageDir),
  };
}
