import type { Command } from '../../lib/exec.js';
import type { Limits } from '../../model/limits.js';
import { CONTAINER_STATUS_DIR } from '../types.js';

/**
 * Podman's command lines, as data (docs/containers.md). Every call names its storage (one per service: its images
 * and layer cache, docs/containers.md "Layer cache"), runc (crun refuses this machine's hybrid cgroups) and plain
 * cgroupfs groups, so no systemd is needed.
 */
export interface PodmanSetup {
  podman: string;
  /** runc's path. */
  ociRuntime: string;
  /** The registries.conf every call reads (short names, insecure registries the operator allowed). */
  registriesConf: string;
  /** The containers.conf every call reads (engine.ts containersConf). */
  containersConf: string;
  /** podman-init (catatonit): PID 1 that forwards signals, so SIGTERM reaches an app that never installed a handler. */
  init: boolean;
  /** The open-files and processes limits containers get: Slipway's own hard limits at most (higher fail in runc). */
  nofile: number;
  nproc: number;
  /** Whether containers may run in user namespaces of their own (the kernel allows them): root images are remapped. */
  userNamespaces: boolean;
}

/** A service's storage: its images, layers and containers, and their run-time state (short-lived, root-only). */
export interface Storage {
  root: string;
  runRoot: string;
}

const podmanEnv = (setup: PodmanSetup, storage: Storage): Record<string, string> => ({
  PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
  LC_ALL: 'C',
  HOME: storage.root,
  TMPDIR: storage.runRoot,
  CONTAINERS_REGISTRIES_CONF: setup.registriesConf,
  CONTAINERS_CONF: setup.containersConf,
});

/**
 * Names Podman itself reads from its environment (its config, storage, auth, proxies, Go's runtime, the loader): a
 * tenant's variable of such a name must not reach Podman's environment, where it would change what Podman does.
 */
const PODMAN_READS =
  /^(CONTAINERS?_|BUILDAH|PODMAN|STORAGE_|REGISTRY_|DOCKER|XDG_|GO|LD_|SSL_|LC_|TZ)|^(TMPDIR|HOME|PATH|LANG|SHELL|USER|NOTIFY_SOCKET)$|proxy$/i;

/**
 * A tenant's variables (build args, env values an env file cannot hold) kept off the command line, which every local
 * user can read in /proc: Podman reads `--build-arg NAME` and `--env NAME` from its own environment. Names Podman
 * reads itself (PODMAN_READS) are the exception, given as NAME=VALUE.
 */
function byEnvironment(flag: string, vars: Record<string, string>): { args: string[]; env: Record<string, string> } {
  const args: string[] = [];
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(vars)) {
    if (PODMAN_READS.test(name)) args.push(flag, `${name}=${value}`);
    else {
      args.push(flag, name);
      env[name] = value;
    }
  }
  return { args, env };
}

function podman(setup: PodmanSetup, storage: Storage, args: string[], vars: Record<string, string> = {}): Command {
  return {
    file: setup.podman,
    args: [
      ...['--root', storage.root, '--runroot', storage.runRoot, '--runtime', setup.ociRuntime],
      // overlay, without its private mount of the storage dir: a service's dir is then removed like any other.
      ...['--storage-driver', 'overlay', '--storage-opt', 'overlay.skip_mount_home=true'],
      ...['--cgroup-manager', 'cgroupfs', '--events-backend', 'file', '--log-level', 'error'],
      ...args,
    ],
    env: { ...vars, ...podmanEnv(setup, storage) },
  };
}

/**
 * The open-files and processes rlimits, given explicitly: Podman's defaults are above what runc may set here (it
 * fails with "error setting rlimit type 7", or 6). Processes get a machine-wide figure, not the plan's pids:
 * RLIMIT_NPROC counts every process of the user on the whole machine (other apps run as the same user), so a
 * plan-sized one made containers fail to start on a busy machine; the cgroup's pids limit is what bounds a container.
 */
const ulimits = (setup: PodmanSetup) => [
  ...['--ulimit', `nofile=${setup.nofile}:${setup.nofile}`],
  ...['--ulimit', `nproc=${setup.nproc}:${setup.nproc}`],
];

export interface ImageBuild {
  contextDir: string;
  dockerfile: string;
  tag: string;
  buildArgs: Record<string, string>;
  limits: Limits;
  /** The build's network namespace: RUN steps share it. */
  netnsPath: string | undefined;
  authFile?: string;
  noCache: boolean;
}

/** `podman build`: layers kept (the cache), RUN steps in the build's namespace and limits, no capabilities added. */
export function buildCommand(setup: PodmanSetup, storage: Storage, build: ImageBuild): Command {
  const memory = `${build.limits.memoryMb}m`;
  const buildArgs = byEnvironment('--build-arg', build.buildArgs);
  return podman(
    setup,
    storage,
    [
      'build',
      ...['--layers', '--pull=missing', '--format', 'docker', '--isolation', 'oci'],
      ...(build.noCache ? ['--no-cache'] : []),
      ...['--network', build.netnsPath ? `ns:${build.netnsPath}` : 'none'],
      ...['--memory', memory, '--memory-swap', memory, '--cpu-period', '100000'],
      ...['--cpu-quota', String(Math.max(1000, Math.round(build.limits.cpuMillicores * 100)))],
      ...ulimits(setup),
      ...(build.authFile ? ['--authfile', build.authFile] : []),
      ...buildArgs.args,
      ...['--file', build.dockerfile, '--tag', build.tag, build.contextDir],
    ],
    buildArgs.env,
  );
}

export const pullCommand = (setup: PodmanSetup, storage: Storage, ref: string, authFile?: string): Command =>
  podman(setup, storage, ['pull', '--quiet', ...(authFile ? ['--authfile', authFile] : []), ref]);

export const tagCommand = (setup: PodmanSetup, storage: Storage, ref: string, tag: string): Command =>
  podman(setup, storage, ['tag', ref, tag]);

/** One image's description (a JSON array of one). */
export const inspectImageCommand = (setup: PodmanSetup, storage: Storage, ref: string): Command =>
  podman(setup, storage, ['image', 'inspect', ref]);

/**
 * A container's own user namespace (docs/containers.md, "Users"): its ids 0…size-1 are host ids from `hostBase`, none
 * of which is a host user's, so its root is nobody on the host. The capabilities it keeps act only inside it (they
 * let an image that starts as root drop to its own user, as nginx's master does).
 */
export interface IdMap {
  hostBase: number;
  size: number;
  capabilities: string[];
}

const idMapArgs = (m: IdMap) => [
  ...['--uidmap', `0:${m.hostBase}:${m.size}`, '--gidmap', `0:${m.hostBase}:${m.size}`],
  ...m.capabilities.flatMap((cap) => ['--cap-add', cap]),
];

/** A path a --tmpfs argument can name (its syntax splits on ':' and ','). */
const isPlainPath = (dir: string) => /^\/[\w./@+-]*$/.test(dir) && !['/', '/tmp', '/var/tmp'].includes(dir);

export interface ContainerRun {
  name: string;
  image: string;
  /** Replaces the image's CMD, run by /bin/sh -c (Render's dockerCommand). */
  command?: string;
  /** The cgroup (relative to each hierarchy's root) whose limits bound it: the instance's own. */
  cgroupParent: string | undefined;
  netnsPath: string | undefined;
  hostsFile?: string;
  resolvConf?: string;
  /** uid:gid, unless the image runs as a user of its own. */
  user: string | undefined;
  /** The host ids its ids 0…size-1 are (a user namespace of its own), and the capabilities it keeps in it. */
  idMap?: IdMap;
  /** The image's VOLUMEs: each a sized tmpfs, as /tmp is. */
  volumes?: string[];
  envFile: string;
  /** Its root writable (its storage is on a sized disk), else read-only; /tmp and /var/tmp are sized tmpfs either way. */
  writableRoot?: boolean;
  /** A dir of secret files, mounted read-only at /etc/secrets (`U`: owned by the container's user, as it maps). */
  secretsDir?: string;
  /** Its service's disk (mounted on the host at `dir`), bound read-write at `mountPath`, owned by its user (`U`). */
  disk?: { dir: string; mountPath: string } | undefined;
  /** A one-off run's status dir, bound read-write at CONTAINER_STATUS_DIR (its exit status is written there). */
  statusDir?: string;
  /** Written with the container's process id once it exists. */
  pidFile?: string;
  /** Values an env file cannot hold (newlines): through Podman's environment (byEnvironment). */
  envArgs: Record<string, string>;
  limits: Limits;
  seccompProfile?: string;
  labels: Record<string, string>;
}

/**
 * `podman run` of a container: a root it writes only where its storage's disk bounds it, a sized private /tmp (as
 * native instances have), no capabilities, no new privileges, the namespace Slipway made, the instance's cgroup as
 * parent (its limits). An instance's (`detached`) is started in the background, its output handed straight to the
 * files the call is given (passthrough: docs/containers.md, "Logs"); a one-off's (a pre-deploy command) runs in the
 * foreground, its output to the caller.
 */
export function runCommand(
  setup: PodmanSetup,
  storage: Storage,
  c: ContainerRun,
  mode: 'detached' | 'foreground',
): Command {
  const detached = mode === 'detached';
  const tmpfs = (dir: string) => ['--tmpfs', `${dir}:rw,nosuid,nodev,size=${c.limits.diskMb}m,U`];
  const multiline = byEnvironment('--env', c.envArgs);
  return podman(
    setup,
    storage,
    [
      'run',
      ...['--name', c.name, '--replace', '--rm', '--pull', 'never'],
      // Detached with passthrough, Podman prints nothing of its own (no container id) into the app's output.
      ...(detached
        ? ['--detach', '--log-driver', 'passthrough']
        : ['--log-driver', 'none', '--attach', 'stdout,stderr']),
      ...(setup.init ? ['--init'] : []),
      ...(c.cgroupParent ? ['--cgroup-parent', c.cgroupParent] : []),
      ...['--network', c.netnsPath ? `ns:${c.netnsPath}` : 'host'],
      ...(c.hostsFile ? ['--no-hosts', '--volume', `${c.hostsFile}:/etc/hosts:ro`] : []),
      ...(c.resolvConf ? ['--volume', `${c.resolvConf}:/etc/resolv.conf:ro`] : []),
      ...(c.secretsDir ? ['--volume', `${c.secretsDir}:/etc/secrets:ro,U`] : []),
      ...(c.disk ? ['--volume', `${c.disk.dir}:${c.disk.mountPath}:rw,nosuid,nodev,U`] : []),
      ...(c.statusDir ? ['--volume', `${c.statusDir}:${CONTAINER_STATUS_DIR}:rw,nosuid,nodev,noexec,U`] : []),
      ...(c.writableRoot ? [] : ['--read-only', '--read-only-tmpfs=false']),
      ...[...tmpfs('/tmp'), ...tmpfs('/var/tmp')],
      // An image's VOLUMEs: sized tmpfs where the path is plain, never an anonymous volume on the host's disk.
      ...['--image-volume', 'tmpfs', ...(c.volumes ?? []).filter(isPlainPath).flatMap(tmpfs)],
      ...['--cap-drop', 'all', '--security-opt', 'no-new-privileges'],
      ...(c.idMap ? idMapArgs(c.idMap) : []),
      ...(c.seccompProfile ? ['--security-opt', `seccomp=${c.seccompProfile}`] : []),
      ...(c.user ? ['--user', c.user] : []),
      ...ulimits(setup),
      ...['--env-file', c.envFile],
      ...(c.pidFile ? ['--pidfile', c.pidFile] : []),
      ...multiline.args,
      ...Object.entries(c.labels).flatMap(([name, value]) => ['--label', `${name}=${value}`]),
      c.image,
      ...(c.command === undefined ? [] : ['/bin/sh', '-c', c.command]),
    ],
    multiline.env,
  );
}

export const removeContainersCommand = (setup: PodmanSetup, storage: Storage, names: string[]): Command =>
  podman(setup, storage, ['rm', '--force', '--ignore', '--time', '0', ...names]);

/** Removes these images (discarded deploys' tags), and the layers only they used. */
export const removeImageCommand = (setup: PodmanSetup, storage: Storage, refs: string[]): Command =>
  podman(setup, storage, ['rmi', '--force', '--ignore', ...refs]);

export const versionCommand = (podmanPath: string): Command => ({
  file: podmanPath,
  args: ['--version'],
  env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' },
});
