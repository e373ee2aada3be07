import { run, spawnDetached, type Command } from '../../../lib/exec.js';
import { isRunning, readStat } from '../proc.js';
import type { ProcessRef } from './leases.js';
import * as plan from './plan.js';

const SLIRP_READY_MS = 5000;
const TIMEOUT_MS = 10_000;

/** Runs `commands` in turn; the first that fails throws, naming the command and what it printed. */
export async function runAll(commands: Command[]): Promise<void> {
  for (const cmd of commands) {
    const result = await run(cmd, { timeoutMs: TIMEOUT_MS });
    if (result.exitCode !== 0)
      throw new Error(
        `${[cmd.file.split('/').pop(), ...cmd.args].join(' ')} failed: ${result.output.trim() || `exit ${result.exitCode}`}`,
      );
  }
}

/** Steps run at once: waits for every one (none is left running on a failure), then throws the first failure. */
export async function together(steps: Array<Promise<unknown>>): Promise<void> {
  const failed = (await Promise.allSettled(steps)).find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

/** Removals whose failure means there was nothing to remove. */
export const runQuietly = (commands: Command[]) =>
  Promise.all(commands.map((cmd) => run(cmd, { timeoutMs: TIMEOUT_MS }).catch(() => undefined)));

/** Starts slirp4netns for namespace `ns` and waits until the namespace has its address and default route. */
export async function startSlirp(
  slirpPath: string,
  ns: string,
  logPath: string,
  hostLoopback = false,
): Promise<ProcessRef> {
  let pid: number;
  try {
    pid = await spawnDetached(
      plan.slirpCommand(slirpPath, ns, hostLoopback),
      { stdoutPath: logPath, stderrPath: logPath },
      () => undefined,
      SLIRP_READY_MS,
    );
  } catch (err) {
    throw new Error(`slirp4netns gave namespace ${ns} no way out: ${(err as Error).message}`);
  }
  return { pid, startTime: readStat(pid)?.startTime ?? '' };
}

export function killSlirp(ref: ProcessRef | undefined): void {
  if (!ref || !isRunning(ref)) return;
  try {
    process.kill(ref.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
