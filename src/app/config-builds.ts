import { availableParallelism, totalmem } from 'node:os';
import type { BuildSettings } from '../model/settings.js';

/** Settings of builds and of the git they run (src/app/config.ts loads them; docs/deploys.md, "Build limits"). */
type Env = Record<string, string | undefined>;

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
