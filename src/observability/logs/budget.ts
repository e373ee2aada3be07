/**
 * Per-service log budget: a token bucket of `ratePerSec` lines a second holding up to `burst`,
 * shared by all of a service's instances and streams. Lines over it are dropped and counted;
 * each service's drops are reported (one report per `reportMs` at most: an event and a line
 * in its own log) so a user sees that, and how much, output was lost.
 */

/** Where dropped lines came from: the notice line goes to the same service, instance and deploy. */
export interface DropSource {
  serviceId: string;
  workspaceId: string;
  /** Null for request lines: the router may not know the instance, and never the deploy. */
  instanceId: string | null;
  deployId: string | null;
}

export interface DropReport extends DropSource {
  droppedLines: number;
  droppedBytes: number;
  /** Some lines were skipped unread (by file offset): their count is estimated from the bytes. */
  estimated: boolean;
  /** The window the count covers, in seconds. */
  seconds: number;
  limitLinesPerSecond: number;
  burstLines: number;
}

export interface LogBudgetDeps {
  ratePerSec: number;
  burst: number;
  reportMs: number;
  onReport(report: DropReport): void;
  /** Called with every drop, for counters (Prometheus). */
  onDrop?(lines: number): void;
  now?: () => number;
}

interface Bucket {
  tokens: number;
  refilledAt: number;
  /** Drops since `since`, not yet reported. */
  lines: number;
  bytes: number;
  estimated: boolean;
  since: number;
  /** When lines were last dropped (ms): the service is read on the poll, not on every write, meanwhile. */
  droppedAt: number;
  source?: DropSource;
}

export function createLogBudget(deps: LogBudgetDeps) {
  const now = deps.now ?? Date.now;
  const buckets = new Map<string, Bucket>();

  function bucket(serviceId: string): Bucket {
    let b = buckets.get(serviceId);
    const t = now();
    if (!b)
      buckets.set(
        serviceId,
        (b = { tokens: deps.burst, refilledAt: t, lines: 0, bytes: 0, estimated: false, since: 0, droppedAt: 0 }),
      );
    else if (t > b.refilledAt) {
      b.tokens = Math.min(deps.burst, b.tokens + ((t - b.refilledAt) * deps.ratePerSec) / 1000);
      b.refilledAt = t;
    }
    return b;
  }

  function report(b: Bucket, t: number) {
    const source = b.source!;
    deps.onReport({
      ...source,
      droppedLines: b.lines,
      droppedBytes: b.bytes,
      estimated: b.estimated,
      seconds: Math.max(1, Math.round((t - b.since) / 1000)),
      limitLinesPerSecond: deps.ratePerSec,
      burstLines: deps.burst,
    });
    b.lines = 0;
    b.bytes = 0;
    b.estimated = false;
  }

  return {
    /** Whole lines `serviceId` may store now (the caller takes what it uses with `spend`). */
    available(serviceId: string): number {
      return Math.floor(bucket(serviceId).tokens);
    },
    spend(serviceId: string, lines: number) {
      if (lines > 0) bucket(serviceId).tokens -= lines;
    },
    /** Counts lines dropped; the report covering them goes out once `reportMs` has passed since the first. */
    drop(source: DropSource, lines: number, bytes: number, estimated = false) {
      if (lines <= 0 && bytes <= 0) return;
      const b = bucket(source.serviceId);
      if (b.lines === 0 && b.bytes === 0) b.since = now();
      b.lines += lines;
      b.bytes += bytes;
      b.estimated ||= estimated;
      b.source = source;
      b.droppedAt = now();
      deps.onDrop?.(lines);
    },
    /** Whether `serviceId` dropped lines in the last `withinMs`. */
    dropping(serviceId: string, withinMs: number): boolean {
      const b = buckets.get(serviceId);
      return !!b && now() - b.droppedAt < withinMs;
    },
    /** Sends the reports that are due (all pending ones with `all`, on shutdown); forgets idle full buckets. */
    reportDue(all = false) {
      const t = now();
      for (const [serviceId, b] of buckets) {
        if (b.lines > 0 || b.bytes > 0) {
          if (all || t - b.since >= deps.reportMs) report(b, t);
        } else if (bucket(serviceId).tokens >= deps.burst && t - b.droppedAt >= deps.reportMs)
          buckets.delete(serviceId);
      }
    },
  };
}
export type LogBudget = ReturnType<typeof createLogBudget>;

/** The line a service finds in its own log where output was dropped. */
export function dropNotice(r: DropReport, what = 'log lines'): string {
  const mb = r.droppedBytes >= 1024 * 1024 ? ` (${(r.droppedBytes / (1024 * 1024)).toFixed(1)} MiB)` : '';
  return `slipway: dropped ${r.estimated ? 'about ' : ''}${r.droppedLines} ${what}${mb} over the last ${r.seconds} s (limit ${r.limitLinesPerSecond} lines/s, burst ${r.burstLines})`;
}
