import type { RunResult } from '../lib/exec.js';

/** From the plan. */
export interface Limits {
  memoryMb: number;
  cpuMillicores: number;
}

/** Where the app may look. */
export interface Sandbox {
  /** The immutable artifact dir (mounted read-only); cwd = path.join(appDir, workDir). */
  appDir: string;
  /** Relative subdir (service rootDir), '' for root. */
  workDir: string;
  /** E.g. the instance's own tmp dir; mounted read-write. */
  writableDirs: string[];
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
  sandbox: Sandbox;
  limits: Limits;
}

export interface InstanceHandle {
  instanceId: string;
  pid: number;
  /** /proc/<pid>/stat field 22, guards against pid reuse. */
  startTime: string;
  startedAt: Date;
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
}

export interface RuntimeCapabilities {
  sandbox: 'bwrap' | 'none';
  runAsUser: { uid: number; gid: number; name: string } | undefined;
  cgroups: 'v2' | 'v1' | 'none';
  /** One line per thing that could not be applied and why. */
  notes: string[];
}

export interface Runtime {
  capabilities: RuntimeCapabilities;
  /** Sandboxed like instances, but network allowed and `dir` writable. */
  build(spec: BuildSpec): Promise<RunResult>;
  /** Detached process group (survives the Slipway process: stdout/stderr go to files, not pipes). */
  start(spec: InstanceSpec): Promise<InstanceHandle>;
  /** False if gone, zombie, or pid reused (startTime differs). */
  isAlive(handle: Pick<InstanceHandle, 'pid' | 'startTime'>): boolean;
  /** SIGTERM to the group, SIGKILL to the group after graceMs, resolves when the group is gone; no-op if already gone. */
  stop(handle: Pick<InstanceHandle, 'pid' | 'startTime'>, graceMs: number): Promise<void>;
  /**
   * path given: HTTP GET 127.0.0.1:port+path until 2xx/3xx; else TCP connect.
   * Rejects early (clear message) if the process dies; rejects on timeout.
   */
  waitHealthy(opts: { handle: Pick<InstanceHandle, 'pid' | 'startTime'>; port: number; path?: string; timeoutMs: number; signal?: AbortSignal }): Promise<void>;
  freePort(): Promise<number>;
}

/** What createLocalRuntime (src/runtime/local/index.ts) logs capabilities through. */
export interface RuntimeLog {
  info(o: object, m?: string): void;
  warn(o: object, m?: string): void;
}
