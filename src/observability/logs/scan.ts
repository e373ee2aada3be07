import type { LogRow } from '../../store/repos/logs.js';

/** Work on stored logs (matching in memory, and the statements that feed it) runs in slices of about this long. */
export const SLICE_MS = 10;

/** Lets pending I/O (other requests) run before going on. */
export const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A yield that took this long ran other work: the loop is shared right now. */
const CONTENDED_MS = 0.5;

/**
 * A clock for work done in slices: `due()` says a slice is over; `rest()` first yields (setImmediate, so pending I/O
 * goes first). When that yield ran other work, the loop is shared: the scan then rests twice as long as its slice (a
 * timer, so other requests' queries and another workspace's deploy steps go first), and uses at most about a third of
 * the loop and of the embedded store. When nothing else was waiting it goes on at once. Measured (bench/abuse.ts,
 * bench/logs.ts): resting as long as each slice whatever the load, another workspace's deploys took 2.2× as long as
 * on a quiet server under the issue's query; resting twice as long always, a filtered query on a quiet server took
 * p50 117 ms instead of 67; yielding only with setImmediate, /api/health p99 was 101–156 ms under the query instead
 * of 47–77.
 */
export function slicer(sliceMs = SLICE_MS) {
  let started = performance.now();
  return {
    due: () => performance.now() - started >= sliceMs,
    async rest() {
      const spent = performance.now() - started;
      const yielded = performance.now();
      await yieldToLoop();
      if (performance.now() - yielded >= CONTENDED_MS)
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
