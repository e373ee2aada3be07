import { availableParallelism } from 'node:os';
import { AppError } from '../../lib/errors.js';
import { createWorkerPool, WorkerLimitError } from '../../lib/worker-pool.js';
import type { BlueprintModel } from './model.js';
import type { ParseTask } from './parse-worker.js';
import type { Validation } from './validate.js';

/** What one file may cost to parse and validate (SLIPWAY_BLUEPRINT_PARSE_SECONDS / _MEMORY_MB). */
export interface ParseLimits {
  timeoutMs: number;
  memoryMb: number;
}

/** Files parsed at once in the process (one per workspace): two, or one on a single core. */
const SLOTS = Math.min(2, availableParallelism());
/** A workspace's files waiting their turn; more are a 429. */
const MAX_WAITING = 2;

/**
 * Parsing and validating render.yaml off the event loop: a 10 MB file can take the `yaml` package tens of seconds and
 * gigabytes (some shapes exhaust the heap and would kill the process), so every file is read in a worker thread
 * (parse-worker.ts) with a time and a heap limit, one workspace's file at a time. Past a limit the answer is a 413 that
 * says which; the API and other workspaces never wait on it.
 */
export function createBlueprintParser(limits: ParseLimits) {
  const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js'; // tsx (dev, tests) or the build
  const pool = createWorkerPool({
    entry: new URL(`./parse-worker.${ext}`, import.meta.url),
    slots: SLOTS,
    perKey: 1,
    maxWaiting: MAX_WAITING,
    timeoutMs: limits.timeoutMs,
    memoryMb: limits.memoryMb,
  });

  async function run<T>(workspaceId: string, task: ParseTask): Promise<T> {
    try {
      return await pool.run<T>(workspaceId, task);
    } catch (err) {
      if (!(err instanceof WorkerLimitError))
        throw new AppError('bad_request', `the Blueprint file could not be read: ${(err as Error).message}`);
      if (err.limit === 'busy') {
        const busy = new AppError('rate_limited', `this workspace's Blueprint files are being read (${err.message})`);
        busy.retryAfterSeconds = Math.ceil(limits.timeoutMs / 1000);
        throw busy;
      }
      const setting = err.limit === 'time' ? 'SLIPWAY_BLUEPRINT_PARSE_SECONDS' : 'SLIPWAY_BLUEPRINT_PARSE_MEMORY_MB';
      throw new AppError(
        'payload_too_large',
        `the Blueprint file is too large or complex to read here: it ${err.message} (${setting})`,
      );
    }
  }

  return {
    /** Render's validation of an uploaded file (validate.ts), in a worker. */
    validate: (workspaceId: string, file: Uint8Array) => run<Validation>(workspaceId, { mode: 'validate', file }),
    /** The validation and, when valid, the model (model.ts readBlueprint), in a worker. */
    read: (workspaceId: string, text: string) =>
      run<{ validation: Validation; model?: BlueprintModel }>(workspaceId, { mode: 'read', file: text }),
    close: () => pool.close(),
  };
}
export type BlueprintParser = ReturnType<typeof createBlueprintParser>;
