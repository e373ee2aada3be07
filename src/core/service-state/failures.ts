import type { RunResult } from '../../lib/exec.js';
import { toStorableText } from '../../lib/text.js';
import type { DeployStatus } from '../../store/repos/deploys.js';
import { HINT_SCAN_CHARS, outputHint } from './output-hints.js';

/** Why a process failed, in the shape of Render's failure reason (events' `failure`), when known. */
export type FailureReason =
  | { oomKilled: { memoryLimit: string } }
  | { timedOutSeconds: number }
  | { nonZeroExit: number }
  | { interrupted: true };

/** Render's oomKilled reason for a process limited to `memoryMb`. */
export const oomKilledReason = (memoryMb: number) => ({ oomKilled: { memoryLimit: `${memoryMb}Mi` } });

/** A step failed: the deploy ends in `status` with `reason` (and the build output so far). */
export class DeployFailure extends Error {
  constructor(
    readonly status: DeployStatus,
    reason: string,
    readonly failure?: FailureReason,
  ) {
    super(toStorableText(reason)); // it may quote a command's output, NUL bytes included
  }
}

/** What a deploy_ended event says of a failure: the status, the reason in words, and Render's structured `failure` when known. */
export const deployEndedDetails = (failure: DeployFailure) => ({
  status: failure.status,
  reason: failure.message,
  ...(failure.failure ? { failure: failure.failure } : {}),
});
/** The same for the build_ended event of a build that failed (Render's buildStatus words). */
export const buildEndedDetails = (failure: DeployFailure) => ({
  ...deployEndedDetails(failure),
  status: failure.status === 'canceled' ? 'canceled' : 'failed',
});

/** The program a shell could not find (exit 127), from its "x: not found" or "x: command not found" line. */
export function missingCommand(output: string): string | undefined {
  const found = [...output.matchAll(/([^\s:'"]+): (?:command )?not found/g)];
  return found.at(-1)?.[1];
}

/**
 * How a build or pre-deploy command failed, if it did; `output` (its tail) is added to a non-zero exit's reason.
 * `memoryHint` says how to get more memory than `memoryMb` (a build: its buildPlan).
 */
export function commandFailure(
  status: DeployStatus,
  what: string,
  result: RunResult,
  limits: { memoryMb: number; timeoutMs: number; memoryHint?: string },
  output?: string,
): DeployFailure | undefined {
  if (result.canceled) return new DeployFailure('canceled', `canceled during ${what}`);
  if (result.oomKilled) {
    return new DeployFailure(
      status,
      `${what} ran out of memory at ${limits.memoryMb} MiB: the kernel killed it at its limit` +
        (limits.memoryHint ? `. ${limits.memoryHint}` : ''),
      oomKilledReason(limits.memoryMb),
    );
  }
  const seconds = Math.round(limits.timeoutMs / 1000);
  if (result.timedOut)
    return new DeployFailure(status, `${what} did not finish within ${seconds} s`, { timedOutSeconds: seconds });
  if (result.exitCode === 0) return undefined;
  const missing = result.exitCode === 127 ? missingCommand(result.output) : undefined;
  const hint = missing
    ? `command not found: "${missing}" is not installed or not on the PATH`
    : outputHint(result.output.slice(-HINT_SCAN_CHARS), 'build');
  const why = hint ? ` (${hint})` : '';
  return new DeployFailure(
    status,
    `${what} exited with ${result.exitCode ?? result.signal}${why}${output ? `: ${output}` : ''}`,
    result.exitCode ? { nonZeroExit: result.exitCode } : undefined,
  );
}
