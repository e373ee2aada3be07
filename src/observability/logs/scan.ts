import type { LogRow } from '../../store/repos/logs.js';

/** Work on stored logs (matching in memory, and the statements that feed it) runs in slices of about this long. */
export const SLICE_MS = 10;

/** Lets pending I/O (other requests) run before going on. */
export const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A clock for work done in slices: `due()` says a slice is over; `rest()` gives the event loop back for twice as long
 * as the slice took (a timer, so pending I/O and other requests' queries go first), so a scan uses at most about a
 * third of the loop and of the embedded store, whatever else is waiting. Measured with the issue's query: /api/health
 * p99 47–77 ms on a loaded 2-core machine, against 101–156 ms yielding only with setImmediate; resting as long as the
 * slice (half the loop), another workspace's deploys took 2.2× as long as on a quiet server (bench/abuse.ts).
 */
export function slicer(sliceMs = SLICE_MS) {
  let started = performance.now();
  return {
    due: () => performance.now() - started >= sliceMs,
    async rest() {
      const spent = performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2 * spent, 20 * sliceMs)));
      started = performance.now();
    },
  };
}

/**
 * The rows `matches` keeps, in order, matched in `slice`'s slices (a slow pattern over long lines cannot hold the
 * loop). The caller's slicer spans its statements too: PGlite answers in microtasks, so a loop of reads and matching
 * gives the loop back only where a slice says so.
 */
export async function matchInSlices(
  rows: LogRow[],
  matches: (row: LogRow) => boolean,
  slice: ReturnType<typeof slicer>,
): Promise<LogRow[]> {
  const kept: LogRow[] = [];
  for (const row of rows) {
    if (matches(row)) kept.push(row);
    if (slice.due()) await slice.rest();
  }
  return kept;
}
