import type { Command, RunResult } from '../lib/exec.js';
import type { Limits } from '../model/limits.js';

/** Where the app may look. */
/** An address and TCP port a datastore server's namespace may reach (its backups' S3 endpoint). */
export interface ServerExit {
  address: string;
  port: number;
}

export interface Sandbox {
  /** The immutable artifact dir (mounted read-only); cwd = path.join(appDir, workDir). */
  appDir: string;
  /** Relative subdir (service rootDir), '' for root. */
  workDir: string;
  /** Host dirs mounted read-write (e.g. a cron run's status dir): what the app writes there is on the host's disk, unlimited. */
  writableDirs: string[];
  /** Writable dirs private to the sandbox (tmpfs of limits.diskMb each, empty at every start), like $HOME; host dirs without bwrap. */
  scratchDirs?: string[];
}

/** The dir under an instance's dir where the runtime writes its secret files; the caller removes it once it stopped. */
export const SECRET_FILES_SUBDIR = 'secrets';

/** One secret file: a plain file name (checked by core/secret-files.ts) and its content. */
export interface SecretFileSpec {
  name: string;
  content: string;
}

export interface InstanceSpec {
  instanceId: string;
  serviceId: string;
  deployId: string;
  /** The runtime writes stdout.log, stderr.log, pid/state files here (created if missing). */
  instanceDir: string;
  /** A shell command line, run with /bin/sh -c. */
  command: string;
  /** Full environment given to the app (PORT included for web services); nothing inherited from Slipway. */
  env: Record<string, string>;
  /** Files the app reads at /etc/secrets/<name> (Render's secret files), read-only; none when absent. */
  secretFiles?: SecretFileSpec[];
  sandbox: Sandbox;
  limits: Limits;
  /** Its workspace's private network, where it answers to `hostnames` (namespaces mode; ignored on the shared network). */
  network?: { workspaceId: string; hostnames: string[] };
  /**
   * A container (runtime docker or image): the image, in its service's storage, instead of a command in `sandbox`. A
   * one-off run's `statusDir` is bound read-write at CONTAINER_STATUS_DIR, where its command writes its exit status.
   */
  container?: { storageDir: string; image: string; command?: string; statusDir?: string };
  /** Its service's persistent disk, mounted (runtime.disks) and bound read-write at `mountPath` in the sandbox. */
  disk?: DiskPlace & { mountPath: string };
  /** Runs the moment the process exits while this Slipway runs it (the router drops it before anything can take its place). */
  onExit?(): void;
}

export interface InstanceHandle {
  instanceId: string;
  pid: number;
  /** /proc/<pid>/stat field 22, guards against pid reuse. */
  startTime: string;
  startedAt: Date;
  /** Where the router and Slipway's checks reach it: its namespace's address, or 127.0.0.1 on the shared network. */
  address: string;
  stdoutPath: string;
  stderrPath: string;
}

export interface BuildSpec {
  /** Writable build dir, the source. */
  dir: string;
  command: string;
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  onOutput?(chunk: string): void;
  limits: Limits;
  /** A host dir kept between the service's builds (its package managers' caches), bound read-write. */
  cacheDir?: string;
  /** The build's HOME, a dir it may write (on its build disk); else a throwaway one. */
  homeDir?: string;
  /** On this workspace's private network (a pre-deploy command reaching its datastores); else a namespace with only a way out. */
  network?: { workspaceId: string };
  /** At /etc/secrets/<name>, as an instance's are (with bwrap). */
  secretFiles?: SecretFileSpec[];
}

/**
 * A program Slipway runs for a tenant that is not its build (git): sandboxed as a build is, in a build namespace with
 * the builds' egress rules, as the app user, with only `writableDirs` (and a private tmpfs HOME) writable.
 */
export interface ToolSpec {
  /** The program and its arguments; `env` is its whole environment (given to it inside the sandbox, never on a command line). */
  command: Command;
  cwd: string;
  writableDirs: string[];
  /** Host dirs it may read (a local repository the operator allowed). */
  readOnlyDirs?: string[];
  timeoutMs: number;
  /** Ended when it prints nothing for this long (RunResult.stalled). */
  idleTimeoutMs?: number;
  signal?: AbortSignal;
  limits: Limits;
  maxOutputBytes?: number;
}

/** A size-capped filesystem for a service's builds (its source, HOME, cache): what they write cannot pass `sizeMb`. */
export interface BuildDisk {
  /** Where it is mounted: a dir the builds see at the same path. */
  dir: string;
  /** False where this machine cannot cap it (then `dir` is a plain dir of the host's disk). */
  capped: boolean;
  /** Its size and what is free on it, in bytes. */
  space(): { sizeBytes: number; freeBytes: number };
  /** Unmounts it, or keeps it mounted for `keepMountedMs` (mountBuildDisk's) for the next build (the image stays). */
  release(): Promise<void>;
}

/** Credentials for one registry host, for one pull or build. */
export interface RegistryAuth {
  host: string;
  username: string;
  password: string;
}

export interface ImageInfo {
  /** The image's id (its config's digest). */
  id: string;
  /** The manifest digest a pull resolved (`sha256:…`); a local build's own. */
  digest: string;
  /** Its USER ('' for root). */
  user: string;
  /** Its EXPOSE'd ports. */
  ports: number[];
  /** Its VOLUMEs' paths. */
  volumes: string[];
}

/** A Dockerfile build into the service's storage (its layer cache), in a build namespace under a build's limits. */
export interface ImageBuildSpec {
  storageDir: string;
  contextDir: string;
  dockerfile: string;
  tag: string;
  buildArgs: Record<string, string>;
  limits: Limits;
  timeoutMs: number;
  signal?: AbortSignal;
  onOutput?(chunk: string): void;
  auth?: RegistryAuth;
  noCache: boolean;
}

export interface ImagePullSpec {
  storageDir: string;
  ref: string;
  /** The name it gets in the storage once pulled (the deploy's). */
  tag: string;
  auth?: RegistryAuth;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** A one-off command in an image (a pre-deploy command), on its workspace's network, under `limits`. */
export interface ContainerJobSpec {
  storageDir: string;
  image: string;
  command: string;
  env: Record<string, string>;
  /** At /etc/secrets/<name>, as an instance's are. */
  secretFiles?: SecretFileSpec[];
  limits: Limits;
  network?: { workspaceId: string };
  timeoutMs: number;
  signal?: AbortSignal;
  onOutput?(chunk: string): void;
}

/** Where a one-off run in a container (a job, a cron run) finds its status dir (InstanceSpec.container.statusDir). */
export const CONTAINER_STATUS_DIR = '/run/slipway-status';

/** The container engine (docs/containers.md): images in each service's own storage. */
export interface Containers {
  /** `podman 4.3.1` */
  engine: string;
  build(spec: ImageBuildSpec): Promise<RunResult & { image?: ImageInfo }>;
  /** Pulls in a build namespace; `image.digest` is what the tag resolved to. */
  pull(spec: ImagePullSpec): Promise<RunResult & { image?: ImageInfo }>;
  inspect(storageDir: string, ref: string): Promise<ImageInfo | undefined>;
  removeImages(storageDir: string, refs: string[]): Promise<void>;
  /** Runs a one-off command in an image and waits for it (RunResult as a build's). */
  run(spec: ContainerJobSpec): Promise<RunResult>;
  /** Lets go of a deleted service's storage (its disk unmounted), before its files are removed. */
  releaseStorage(storageDir: string): Promise<void>;
}

export interface RuntimeCapabilities {
  /** The container engine's name and version, or why there is none (with the command that installs one). */
  containers: { engine: string } | { none: string };
  sandbox: 'bwrap' | 'none';
  runAsUser: { uid: number; gid: number; name: string } | undefined;
  cgroups: 'v2' | 'v1' | 'none';
  /** namespaces: a namespace per instance and build, a private network per workspace; shared: the host's (one team only). */
  network: 'namespaces' | 'shared';
  /** Which limits this machine enforces; each false one is explained in `notes`. */
  limits: {
    memory: boolean;
    cpu: boolean;
    pids: boolean;
    disk: boolean;
    seccomp: boolean;
    buildDisk: boolean;
    /** Each service's container storage (images, containers' roots) on a sized disk of its own. */
    containerDisk?: boolean;
  };
  /** One line per thing that could not be applied and why. */
  notes: string[];
}

/** A Node.js release installed for builds and instances (runtime/local/node-install.ts). */
export interface NodeInstall {
  version: string;
  /** Its prefix: bin/node, include/node (the headers native addons build against). */
  dir: string;
  binDir: string;
}

/** One of the host's Pythons (runtime/local/python.ts). */
export interface PythonInstall {
  /** `3.11.2` */
  version: string;
  /** The interpreter, visible in builds at this path. */
  path: string;
  /** Set when it is not exactly what was asked for (another patch release of the same line). */
  note?: string;
}

/** The language runtimes a deploy may ask for, beyond what the host has on its PATH. */
export interface RuntimeTools {
  /** The host's own Node.js version (`20.11.1`): what runs when a deploy asks for none. */
  hostNode: string;
  /**
   * The Node.js release a request names (`18`, `>=18 <21`, `lts`, `20.11.1`), installed and checked once; the cache
   * is readable in every build and instance. Rejects with a message for the deploy's failure reason (what is available).
   */
  node(request: string, signal?: AbortSignal): Promise<NodeInstall>;
  /** The Node.js release a request names, as node() would pick it, without downloading it; rejects likewise. */
  checkNode(request: string, signal?: AbortSignal): Promise<string>;
  /**
   * The host's Python for a request (`3.11`, `3.11.4`; undefined: its python3), able to make a virtualenv. Rejects
   * with what the host has when it has not that line.
   */
  python(request: string | undefined): Promise<PythonInstall>;
}

/** Where a service's persistent disk lives on the host: its image file, the dir it is mounted at, its size. */
export interface DiskPlace {
  image: string;
  dir: string;
  sizeMb: number;
}

/** Services' persistent disks (runtime/local/service-disks.ts; docs/deploys.md, "Disks"). */
export interface ServiceDisks {
  /** Whether a disk's size is enforced (a loop-mounted image) or only watched (a plain dir of the host's disk). */
  capped: boolean;
  /** Mounts it at `dir` (made, or grown to `sizeMb`, first); nothing when it is mounted already. */
  mount(place: DiskPlace): Promise<void>;
  unmount(place: DiskPlace): Promise<void>;
  usedBytes(place: DiskPlace): Promise<number>;
  /** A copy of one instant of it into `file`: the bytes the copy takes; undefined when it holds nothing yet. */
  snapshot(place: DiskPlace, file: string): Promise<number | undefined>;
  /** Its image replaced by a snapshot's copy (its instances stopped); mounted again at the next start. */
  restore(place: DiskPlace, file: string): Promise<void>;
  /** Unmounts it and deletes its files. */
  remove(place: DiskPlace): Promise<void>;
}

export interface Runtime {
  capabilities: RuntimeCapabilities;
  /** Undefined where instances cannot bind one (no sandbox): disks are refused (capabilities.notes says why). */
  disks?: ServiceDisks;
  /** Undefined where no engine is installed: docker and image services are refused (capabilities.containers says why). */
  containers?: Containers;
  tools: RuntimeTools;
  /** Sandboxed like instances, but network allowed and `dir` writable. */
  build(spec: BuildSpec): Promise<RunResult>;
  /** A program run for a tenant besides its build (git), sandboxed and networked as a build (ToolSpec). */
  runTool(spec: ToolSpec): Promise<RunResult>;
  /**
   * Mounts the build disk kept in the file `image` at `dir` (made, `sizeMb` large, when missing or of another size), for
   * one build at a time; `release()` unmounts it. Also unmounts any disk a killed Slipway left mounted at `dir`.
   */
  mountBuildDisk(opts: { image: string; dir: string; sizeMb: number; keepMountedMs?: number }): Promise<BuildDisk>;
  /** Unmounts now the disk kept mounted at `dir` after its last build (mountBuildDisk's keepMountedMs); all, if none. */
  unmountBuildDisk?(dir?: string): Promise<void>;
  /** Detached process group (survives the Slipway process: stdout/stderr go to files, not pipes). */
  start(spec: InstanceSpec): Promise<InstanceHandle>;
  /**
   * The instance is up (healthy, or a worker alive after its first second): its start-up CPU boost ends and it runs
   * within its plan's CPU from now on (docs/deploys.md, "Start-up CPU boost"). Where there is no boost, nothing.
   */
  settle?(handle: Pick<InstanceHandle, 'instanceId'>): void;
  /** False if gone, zombie, or pid reused (startTime differs). */
  isAlive(handle: Pick<InstanceHandle, 'pid' | 'startTime'>): boolean;
  /** SIGTERM to the group, SIGKILL to the group after graceMs, resolves when the group is gone; no-op if already gone. */
  stop(handle: Pick<InstanceHandle, 'pid' | 'startTime'>, graceMs: number): Promise<void>;
  /**
   * path given: HTTP GET host:port+path until 2xx/3xx; else TCP connect. Resolves with the port that answered: another
   * one the app opened when it does not open `port`, where the runtime can see its sockets (docs/deploys.md, "Port
   * detection"). Rejects early (clear message) if the process dies or listens on loopback only; rejects on timeout.
   */
  waitHealthy(opts: {
    /** Its stderrPath, when known, is read for why a process exited before it was healthy. */
    handle: Pick<InstanceHandle, 'pid' | 'startTime'> & Partial<Pick<InstanceHandle, 'stderrPath'>>;
    host: string;
    port: number;
    path?: string;
    timeoutMs: number;
    signal?: AbortSignal;
  }): Promise<{ port: number }>;
  /** The PORT for a new instance: Render's 10000 in a namespace of its own; a free loopback port on the shared network. */
  instancePort(): Promise<number>;
  /** Where a running (or re-adopted) instance is reached; 127.0.0.1 on the shared network. */
  addressOf(instanceId: string): string;
  /** Removes what the instance had besides its processes (its namespace and address); call after it stopped. */
  release(instanceId: string): Promise<void>;
  /** Removes the namespaces of instances that `keep` refuses (at start: those lost while Slipway was down). */
  sweep(keep: (instanceId: string) => boolean): Promise<void>;
  /**
   * A namespace on the workspace's private network for a datastore server, where the workspace's apps reach it as
   * `hostnames`; undefined on the shared network. `wrap` runs a command inside it. `release(id)` removes it. Its only
   * ways out are `exits` (host addresses and ports, none by default); `exits` in the answer are where it reaches them.
   */
  attachServer(
    id: string,
    workspaceId: string,
    hostnames: string[],
    exits?: ServerExit[],
  ): Promise<{ address: string; wrap(cmd: Command): Command; exits: ServerExit[] } | undefined>;
  /** Removes the namespaces of datastore servers that `keep` refuses. */
  sweepServers(keep: (id: string) => boolean): Promise<void>;
  /**
   * `name`, when this host has that user and Slipway (running as root) may run a program of its own as them; else
   * undefined. nginx's workers run so, apart from the user the apps run as, who could otherwise signal them.
   */
  daemonUser(name: string): string | undefined;
  /** Whether the instance's process, found exited, was killed for going over its memory limit; told once. Optional: runtimes without limits never say so. */
  oomKilled?(instanceId: string): boolean;
  /** Removes what the runtime made ahead of need (spare namespaces); running instances and their namespaces stay. */
  close?(): Promise<void>;
}
