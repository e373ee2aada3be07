import type { RequestRecord } from '../../router/router.js';
import type { NewLogEntry } from '../../store/repos/logs.js';
import type { LogBudget } from './budget.js';

/**
 * The router's per-request hook: each request as a `request` log entry, within the service's request budget (a bucket
 * of its own, so a flood of requests neither starves the app's own lines nor is starved by them). A router serves
 * tens of thousands of requests a second, far more than the store keeps at that rate: the rest are counted and
 * reported, as an app's lines over its budget are. Traffic metrics and bandwidth count every request (server.ts).
 */
export function createRequestLog(deps: {
  budget: LogBudget;
  /** Queues the entry; false when it was dropped (more pending than the sink holds while the store lags). */
  push(entry: NewLogEntry): boolean;
  /** The workspace of a service, or undefined when it is gone (the lookup is kept: logs/index.ts). */
  workspaceOf(serviceId: string): Promise<string | undefined>;
  onError(err: unknown): void;
}) {
  // Resolved lookups, so a request of a known service costs no promise.
  const known = new Map<string, string>();

  function take(r: RequestRecord, workspaceId: string, timeMs: number): void {
    const path = r.path.slice(0, 2048);
    const message = `${r.method} ${path} ${r.statusCode} ${r.durationMs.toFixed(1)}ms ${r.bytesOut}B`;
    const drop = () => {
      const source = { serviceId: r.serviceId, workspaceId, instanceId: r.instanceId ?? null, deployId: null };
      deps.budget.drop(source, 1, Buffer.byteLength(message));
    };
    // What was served while Slipway was down is not held to the budget, as apps' output is not (the budget measures a
    // rate, not a backlog); the sink's bound still applies to it, and what it drops is reported too.
    if (!r.backlog) {
      if (deps.budget.available(r.serviceId) < 1) return drop();
      deps.budget.spend(r.serviceId, 1);
    }
    const queued = deps.push({
      workspaceId,
      resourceId: r.serviceId,
      instanceId: r.instanceId ?? null,
      type: 'request',
      level: r.statusCode >= 500 ? 'error' : 'info',
      message,
      method: r.method.slice(0, 32),
      path,
      statusCode: r.statusCode,
      host: r.host.slice(0, 255),
      durationMs: r.durationMs,
      bytes: r.bytesOut,
      timeMs,
    });
    if (!queued) drop();
  }

  return function onRequest(r: RequestRecord): void {
    const timeMs = Date.now();
    const workspaceId = known.get(r.serviceId);
    if (workspaceId) return take(r, workspaceId, timeMs);
    deps
      .workspaceOf(r.serviceId)
      .then((found) => {
        if (!found) return;
        if (known.size >= 10_000) known.clear(); // bounded: services come and go
        known.set(r.serviceId, found);
        take(r, found, timeMs);
      })
      .catch(deps.onError);
  };
}
