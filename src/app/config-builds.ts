import { availableParallelism, totalmem } from 'node:os';

/** Settings of builds and of the git they run (src/app/config.ts loads them; docs/deploys.md, "Build limits"). */
type Env = Record<string, string | undefined>;

export interface BuildSettings {
  /** Each service's build disk in MiB (SLIPWAY_BUILD_DISK_MB): its source, build, HOME and dependency cache together. */
  diskMb: number;
  /** The largest artifact a build may leave, in MiB (SLIPWAY_ARTIFACT_MAX_MB). */
  artifactMaxMb: number;
  /** Builds that run at once on this Slipway (SLIPWAY_BUILD_CONCURRENCY); the rest wait, `queued`. */
  concurrency: number;
  /** Builds of one workspace that run at once (SLIPWAY_BUILD_CONCURRENCY_PER_WORKSPACE). */
  perWorkspace: number;
  /** The builds running at once may together be given at most this much memory, in MiB (SLIPWAY_BUILD_MEMORY_MB). */
  memoryMb: number;
  /** A poll (`git ls-remote`) takes at most, and a clone may receive nothing for at most, this long (SLIPWAY_GIT_TIMEOUT_SECONDS). */
  gitTimeoutMs: number;
}

function positive(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

/**
 * By default half the machine's memory goes to builds, and as many run at once as there are cores and as that half
 * holds starter builds (each may take `starterMemoryMb`); one workspace takes all but one of them, so another's build
 * always has a slot to wait for.
 */
export function buildSettings(env: Env, starterMemoryMb: number): BuildSettings {
  const memoryMb = positive(env, 'SLIPWAY_BUILD_MEMORY_MB', Math.floor(totalmem() / 1024 / 1024 / 2));
  const concurrency = positive(
    env,
    'SLIPWAY_BUILD_CONCURRENCY',
    Math.max(1, Math.min(availableParallelism(), Math.floor(memoryMb / starterMemoryMb))),
  );
  return {
    diskMb: positive(env, 'SLIPWAY_BUILD_DISK_MB', 8192),
    artifactMaxMb: positive(env, 'SLIPWAY_ARTIFACT_MAX_MB', 2048),
    concurrency,
    perWorkspace: Math.min(
      concurrency,
      positive(env, 'SLIPWAY_BUILD_CONCURRENCY_PER_WORKSPACE', Math.max(1, concurrency - 1)),
    ),
    memoryMb,
    gitTimeoutMs: positive(env, 'SLIPWAY_GIT_TIMEOUT_SECONDS', 20) * 1000,
  };
}
