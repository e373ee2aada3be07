import { DEFAULT_NETWORK_CIDR } from '../../model/settings.js';
import path from 'node:path';
import type { Command } from '../../lib/exec.js';
import type { Runtime, RuntimeCapabilities } from '../types.js';
import { chooseContainers, containersOf } from './container-images.js';
import { createBuildDisks, detectDiskTools, sweepBuildDisks } from './build-disks.js';
import { createServiceDisks } from './service-disks.js';
import { createContainerDisks, DEFAULT_CONTAINER_DISK_MB } from './container-disks.js';
import { runBuild, runTool } from './builds.js';
import { detectCapabilities, findProgram, lookupUser, type SandboxMode } from './capabilities.js';
import { permissionHint } from './host-paths.js';
import { createStartupBoosts } from './startup-boost.js';
import { waitHealthy } from './health.js';
import { listenersOf } from './listeners.js';
import { startInstance, type LocalDeps } from './instances.js';
import { createNetworks, detectNetworkTools } from './network/index.js';
import { freePort } from './ports.js';
import { createOomRecord } from './oom-record.js';
import { isRunning } from './proc.js';
import { stopInstance } from './processes.js';
import { installCorepackShims, type CorepackSettings } from './toolchain.js';
import { createNodeInstaller } from './node-install.js';
import { createPythons } from './python.js';
import { withOverrides, type LimitOverrides } from './sandbox-limits.js';
import type { Logger } from '../../lib/logger.js';

export type NetworkMode = 'auto' | 'namespaces' | 'shared';

const DEFAULT_REGISTRY = 'https://registry.npmjs.org';

/** Render's default PORT: every instance has its own namespace, so they can all listen on it. */
const NAMESPACED_PORT = 10000;

/** Namespaces when asked for or possible (auto); the shared network, with a note, otherwise. */
async function chooseNetwork(
  options: { dataDir: string; mode: NetworkMode; cidr: string; egressAllow: string[] },
  capabilities: RuntimeCapabilities,
): Promise<LocalDeps['networks']> {
  if (options.mode === 'shared') {
    capabilities.notes.push(
      'the network is shared (SLIPWAY_NETWORK=shared): apps listen on 127.0.0.1 and can reach each other and anything Slipway can; fit for one team only',
    );
    return undefined;
  }
  const tools = await detectNetworkTools(findProgram);
  if (typeof tools === 'string') {
    if (options.mode === 'namespaces')
      throw new Error(`SLIPWAY_NETWORK=namespaces, but namespaces cannot be made here: ${tools}`);
    capabilities.notes.push(
      `the network is shared, fit for one team only: apps listen on 127.0.0.1 and can reach each other and anything Slipway can (${tools})`,
    );
    return undefined;
  }
  if (tools.nftMissing) {
    // The namespaces still keep workspaces apart; what they no longer keep out is the host and the private ranges.
    if (options.mode === 'namespaces')
      throw new Error(
        `SLIPWAY_NETWORK=namespaces, but apps could reach this machine's listeners and private networks without the egress filter: ${tools.nftMissing}`,
      );
    capabilities.notes.push(
      `apps and builds can reach this machine's listeners (through their gateway and its addresses) and private networks (LAN, cloud metadata): no egress filter in their namespaces (${tools.nftMissing})`,
    );
  }
  const networks = createNetworks({
    owner: path.resolve(options.dataDir),
    cidr: options.cidr,
    tools,
    egressAllow: options.egressAllow,
  });
  // The whole way once (netns, slirp4netns's tap device, routes): `ip netns add` alone passes where /dev/net/tun is missing.
  // Twice at most: on a loaded machine slirp4netns can miss its readiness deadline once, and falling back to the shared
  // network for the whole life of this process would be the wrong answer to that.
  const probe = () => networks.probeBuild();
  let failure = await probe();
  if (failure) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    failure = await probe();
  }
  if (failure) {
    if (options.mode === 'namespaces')
      throw new Error(`SLIPWAY_NETWORK=namespaces, but a namespace could not be set up here: ${failure}`);
    capabilities.notes.push(
      `the network is shared, fit for one team only: a namespace could not be set up here (${failure})`,
    );
    return undefined;
  }
  capabilities.network = 'namespaces';
  if (capabilities.sandbox !== 'bwrap') {
    capabilities.notes.push(
      "without bwrap, apps see the machine's /etc/hosts and /etc/resolv.conf: internal hostnames (<slug>) do not resolve, nor does anything when the machine's nameserver is on its loopback",
    );
  }
  return { networks, nsenterPath: tools.nsenter };
}

/**
 * The runtime that runs builds and instances as local processes, sandboxed as far as this machine allows.
 * Capabilities are detected once here; the caller reports them (src/app/startup-summary.ts).
 */
export async function createLocalRuntime(options: {
  dataDir: string;
  network?: NetworkMode;
  networkCidr?: string;
  /** IPv4 CIDRs namespaces may reach although they are private (SLIPWAY_EGRESS_ALLOW). */
  egressAllow?: string[];
  limits?: LimitOverrides;
  sandbox?: SandboxMode;
  /** Where Corepack fetches yarn and pnpm for builds, and the keys it checks them with (toolchain.ts). */
  corepack?: CorepackSettings;
  /** Where the Node.js releases deploys ask for are kept (SLIPWAY_NODE_CACHE_DIR; default <data dir>/toolchain/node). */
  nodeCacheDir?: string;
  /** How many Node.js releases that dir keeps at most (SLIPWAY_NODE_RELEASES_MAX). */
  nodeReleasesMax?: number;
  /** off: no container engine even where one is installed (SLIPWAY_CONTAINERS). */
  containers?: 'auto' | 'off';
  /** Registries containers may reach without TLS checks (SLIPWAY_CONTAINER_INSECURE_REGISTRIES). */
  insecureRegistries?: string[];
  /** Each service's container disk, in MiB (SLIPWAY_CONTAINER_DISK_MB). */
  containerDiskMb?: number;
  log?: Pick<Logger, 'info' | 'warn'>;
}): Promise<Runtime> {
  const { capabilities, policy, cgroups } = await detectCapabilities(options.dataDir, options.sandbox);
  await sweepBuildDisks(options.dataDir);
  const networks = await chooseNetwork(
    {
      dataDir: options.dataDir,
      mode: options.network ?? 'auto',
      cidr: options.networkCidr ?? DEFAULT_NETWORK_CIDR,
      egressAllow: options.egressAllow ?? [],
    },
    capabilities,
  );
  const noDiskLimit = (why: string) =>
    `builds write to the host's disk without a size limit (SLIPWAY_BUILD_DISK_MB cannot apply): ${why}`;
  const disks = detectDiskTools();
  if (typeof disks === 'string') capabilities.notes.push(noDiskLimit(disks));
  capabilities.limits.buildDisk = typeof disks !== 'string';
  const { mountBuildDisk, unmountBuildDisk } = createBuildDisks(
    typeof disks === 'string' ? undefined : disks,
    (why) => {
      capabilities.limits.buildDisk = false;
      capabilities.notes.push(noDiskLimit(why));
      options.log?.warn({ note: noDiskLimit(why) }, `runtime: ${noDiskLimit(why)}`);
    },
  );
  const { log } = options;
  cgroups?.sweepEmpty();
  const oom = createOomRecord(cgroups);

  const user = capabilities.runAsUser;
  // Without bwrap, the app user opens its files on the host by path (host-paths.ts).
  const hostFiles = !policy.bwrap && user ? { dataDir: options.dataDir, user } : undefined;
  const toolchain = installCorepackShims(path.join(options.dataDir, 'toolchain', 'bin'), options.corepack);
  if (!toolchain) {
    const note = 'this Node has no Corepack: builds cannot run yarn or pnpm (install a Node that bundles it, 14.19+)';
    capabilities.notes.push(note); // reported with the others (logMachineReport, /status)
  }
  // Node.js releases come from the registry Corepack uses (SLIPWAY_NPM_REGISTRY), and every build and instance reads them.
  const node = createNodeInstaller({
    dir: options.nodeCacheDir ?? path.join(options.dataDir, 'toolchain', 'node'),
    registry: options.corepack?.registry ?? DEFAULT_REGISTRY,
    maxReleases: options.nodeReleasesMax,
    log,
  });
  const pythons = createPythons();
  const boosts = createStartupBoosts(cgroups);
  const engine = await chooseContainers(
    {
      dataDir: options.dataDir,
      insecureRegistries: options.insecureRegistries ?? [],
      off: options.containers === 'off',
    },
    capabilities,
    !!policy.bwrap?.seccomp,
  );
  capabilities.limits.containerDisk = !!engine.containers && typeof disks !== 'string';
  if (engine.containers && typeof disks === 'string')
    capabilities.notes.push(
      `containers' roots are read-only, and their images take the host's disk unbounded: ${disks}`,
    );
  const containerDisks = createContainerDisks(
    typeof disks === 'string' ? undefined : disks,
    options.containerDiskMb ?? DEFAULT_CONTAINER_DISK_MB,
  );
  const serviceDisks = policy.bwrap
    ? createServiceDisks(typeof disks === 'string' ? undefined : disks, policy.runAs)
    : undefined;
  if (!serviceDisks)
    capabilities.notes.push('services cannot have disks: instances need the sandbox (bubblewrap) to bind one');
  else if (!serviceDisks.capped)
    capabilities.notes.push(
      "disks' sizes are not enforced (each is a dir of the host's disk; an event says when one passes its size)",
    );
  const deps: LocalDeps = {
    containerDisks,
    serviceDisks,
    policy,
    cgroups,
    log,
    networks,
    hostFiles,
    toolchain,
    toolDirs: [node.dir],
    boosts,
    ...engine,
  };
  return {
    capabilities,
    containers: engine.containers && containersOf(engine.containers, deps, path.join(options.dataDir, 'containers')),
    tools: {
      hostNode: process.versions.node,
      node: (request, signal) => node.resolve(request, signal),
      checkNode: (request, signal) => node.check(request, signal),
      python: (request) => pythons.resolve(request),
    },
    build: (spec) => runBuild(deps, { ...spec, limits: withOverrides(spec.limits, options.limits) }),
    runTool: (spec) => runTool(deps, spec),
    mountBuildDisk,
    unmountBuildDisk,
    disks: serviceDisks,
    start: (spec) =>
      startInstance(deps, {
        ...spec,
        limits: withOverrides(spec.limits, options.limits),
        onExit: () => {
          spec.onExit?.();
          oom.noteExit(spec.instanceId);
        },
      }),
    oomKilled: (instanceId) => oom.take(instanceId),
    settle: (handle) => boosts.settle(handle.instanceId),
    isAlive: isRunning,
    async stop(handle, graceMs) {
      const left = await stopInstance(handle, graceMs, cgroups);
      if (left.length > 0)
        log?.warn({ pid: handle.pid, cgroups: left }, 'could not remove the cgroups of a stopped instance');
    },
    waitHealthy: ({ handle, ...check }) =>
      waitHealthy(
        {
          ...check,
          // In a namespace of its own, every socket there is the app's; on the shared network they are everyone's.
          ...(networks ? { listeners: () => listenersOf(handle.pid) } : {}),
          exitHint: () =>
            hostFiles && handle.stderrPath ? permissionHint(handle.stderrPath, hostFiles.user) : undefined,
        },
        () => isRunning(handle),
      ),
    instancePort: async () => (networks ? NAMESPACED_PORT : freePort()),
    addressOf: (instanceId) => networks?.networks.addressOf(instanceId) ?? '127.0.0.1',
    release: async (instanceId) => networks?.networks.release(instanceId),
    sweep: async (keep) => networks?.networks.sweep(keep, 'instance'),
    async attachServer(id, workspaceId, hostnames, exits) {
      if (!networks) return undefined;
      const attached = await networks.networks.attach(id, workspaceId, hostnames, 'server', exits);
      const { address, netnsPath } = attached;
      // Entering a namespace takes root: a command meant to run as another user becomes it after (nsenter's -G/-S, which drop supplementary groups too).
      const wrap = ({ uid, gid, ...cmd }: Command): Command => ({
        ...cmd,
        file: networks.nsenterPath,
        args: [
          `--net=${netnsPath}`,
          ...(gid === undefined ? [] : [`--setgid=${gid}`]),
          ...(uid === undefined ? [] : [`--setuid=${uid}`]),
          '--',
          cmd.file,
          ...cmd.args,
        ],
      });
      return { address, wrap, exits: attached.exits ?? [] };
    },
    sweepServers: async (keep) => networks?.networks.sweep(keep, 'server'),
    daemonUser: (name) => (process.getuid?.() === 0 && lookupUser(name) ? name : undefined),
    close: async () => networks?.networks.close(),
  };
}
