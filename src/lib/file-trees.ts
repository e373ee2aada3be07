import { lstatSync } from 'node:fs';
import { run, type Command, TOOL_ENV } from './exec.js';

// Whole file trees are copied, measured and removed by programs in a child process: walking a node_modules tree here
// would hold the event loop.
const COPY_TIMEOUT_MS = 10 * 60_000;

/**
 * `cp -a`: a symlink is copied as a link, never followed (the top one included: -a implies -P), so a build that
 * planted links in its node_modules cannot make Slipway, which copies as root, read or write through them.
 */
export const copyTreeCommand = (from: string, to: string): Command => ({
  file: 'cp',
  args: ['-a', '--reflink=auto', '--', from, to],
  env: TOOL_ENV,
});

/** Disk use in KiB, a line per dir, hard links counted once (across the dirs too). */
export const diskUsageCommand = (...dirs: string[]): Command => ({
  file: 'du',
  args: ['-s', '-k', '--', ...dirs],
  env: TOOL_ENV,
});

export const isRealDir = (dir: string) => {
  try {
    return lstatSync(dir).isDirectory();
  } catch {
    return false;
  }
};

/** `rm -rf`, never crossing into another file system (a mounted build disk). */
export const removeTreeCommand = (dirs: string[]): Command => ({
  file: 'rm',
  args: ['-rf', '--one-file-system', '--', ...dirs],
  env: TOOL_ENV,
});

/** Removes the trees of `dirs` that exist (no process at all when none does). */
export async function removeTree(...dirs: string[]): Promise<void> {
  const there = dirs.filter((dir) => lstatSync(dir, { throwIfNoEntry: false }));
  if (there.length > 0) await run(removeTreeCommand(there), { timeoutMs: COPY_TIMEOUT_MS });
}

/** Disk use of `dir` in bytes, hard links counted once (0 when it is not a dir). */
export async function sizeOf(dir: string): Promise<number> {
  if (!isRealDir(dir)) return 0;
  const result = await run(diskUsageCommand(dir), { timeoutMs: COPY_TIMEOUT_MS });
  return Number(/^(\d+)/.exec(result.output)?.[1] ?? 0) * 1024;
}
