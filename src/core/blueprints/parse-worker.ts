/**
 * A worker thread's entry (core/blueprints/parse.ts): reads a render.yaml's bytes, validates it and, when asked,
 * reads it into the model. Whatever the file costs in time or memory is this thread's, within its limits.
 */
import { parentPort } from 'node:worker_threads';
import { lowerThreadPriority } from '../../lib/thread-priority.js';
import type { WorkerReply } from '../../lib/worker-pool.js';
import { readBlueprint } from './model.js';
import { validateBlueprint } from './validate.js';

export interface ParseTask {
  mode: 'validate' | 'read';
  /** The file, as uploaded (UTF-8), or as read from the source. */
  file: Uint8Array | string;
}

// A 10 MB file keeps this thread busy for seconds: the API and other workspaces' deploys go first (docs/blueprints.md).
lowerThreadPriority();

parentPort!.on('message', ({ mode, file }: ParseTask) => {
  let reply: WorkerReply<unknown>;
  try {
    const text =
      typeof file === 'string' ? file : Buffer.from(file.buffer, file.byteOffset, file.byteLength).toString();
    reply = { result: mode === 'validate' ? validateBlueprint(text) : readBlueprint(text) };
  } catch (err) {
    reply = { error: (err as Error).message };
  }
  parentPort!.postMessage(reply);
});
