import { randomUUID } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../lib/logger.js';
import { removeTree } from '../../lib/file-trees.js';

/**
 * What Slipway deletes under the data dir (a deleted service's files, old artifacts) goes to the data dir's trash at
 * once, by a rename, and `rm -rf` removes it in the background, one batch after another: a request never waits for a
 * tree of node_modules to be unlinked, and the event loop never does it. What a crash leaves in the trash goes at
 * the next start (`empty`).
 */
export function createTrash(dir: string, log: Pick<Logger, 'warn'>) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let emptying: Promise<void> = Promise.resolve();

  /** Removes everything in the trash, after the removals already under way. */
  function empty(): Promise<void> {
    emptying = emptying.then(async () => {
      const entries = readdirSync(dir).map((entry) => path.join(dir, entry));
      if (entries.length) await removeTree(...entries);
    });
    emptying = emptying.catch((err: unknown) =>
      log.warn({ err }, 'trash: removing deleted files failed; the next start tries again'),
    );
    return emptying;
  }

  return {
    /** Moves `target` (a file or a dir under the data dir) out of the way now; it is removed in the background. */
    discard(target: string): void {
      if (!lstatSync(target, { throwIfNoEntry: false })) return;
      renameSync(target, path.join(dir, `${path.basename(target)}-${randomUUID()}`));
      void empty();
    },
    empty,
  };
}
export type Trash = ReturnType<typeof createTrash>;
