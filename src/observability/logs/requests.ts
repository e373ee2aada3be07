import { createLru } from '../../lib/lru.js';
import type { RequestRecord } from '../../router/types.js';
import type { NewLogEntry } from '../../store/repos/logs.js';
import type { LogBudget } from './budget.js';

/** Services whose workspace is kept: beyond it the least recently seen is looked up again when it comes back. */
const WORKSPACES_KEPT = 10_000;

/**
 * The router's per-request hook: each request as a `request` log entry, within the service's request budget (a bucket
 * of its own, so a flood of requests neither starves the app's own lines nor is starved by them). A router serves
 * tens of thousands of requests a second, far more than the store keeps at that rate: the rest are counted and
 * reported, as an app's lines over its budget are. Traffic metrics and bandwidth count every request (app/start.ts).
 */
export function createRequestLog(deps: {
  budget: LogBudget;
  /** Queues the entry; false when it was dropped (more pending than the sink holds while the store lags). */
  push(entry: NewLogEntry): boolean;
  /** The workspace of a service, or undefined when it is gone. */
  workspaceOf(serviceId: string): Promise<string | undefined>;
  onError(err: unknown): void;
}) {
  // A service's workspace (null: the service is gone), or the lookup under way: the access log read after a restart
  // hands on thousands of a service's requests at once, and they share one query instead of each sending its own.
  const workspaces = createLru<string, string | null | Promise<string | null>>(WORKSPACES_KEPT);

  function lookUp(serviceId: string): Promise<string | null> {
    const found = deps.workspaceOf(serviceId).then(
      (workspaceId) => {
        workspaces.set(serviceId, workspaceId ?? null);
        return workspaceId ?? null;
      },
      (err: unknown) => {
        workspaces.delete(serviceId); // the store failed: asked again next time
        throw err;
      },
    );
    workspaces.set(serviceId, found);
    return found;
  }

  function drop(r: RequestRecord, workspaceId: string, bytes: number): void {
    const source = { serviceId: r.serviceId, workspaceId, instanceId: r.instanceId ?? null, deployId: null };
    deps.budget.drop(source, 1, bytes);
  }

  function take(r: RequestRecord, workspaceId: string, timeMs: number): void {
    const path = r.path.slice(0, 2048);
    const message = `${r.method} ${path} ${r.statusCode} ${r.durationMs.toFixed(1)}ms ${r.bytesOut}B`;
    // What was served while Slipway was down is not held to the budget, as apps' output is not (the budget measures a
    // rate, not a backlog); the sink's bound still applies to it, and what it drops is reported too.
    if (!r.backlog) {
      if (deps.budget.available(r.serviceId) < 1) return drop(r, workspaceId, Buffer.byteLength(message));
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
    if (!queued) drop(r, workspaceId, Buffer.byteLength(message));
  }

  return function onRequest(r: RequestRecord): void {
    const timeMs = Date.now();
    const known = workspaces.get(r.serviceId);
    if (typeof known === 'string') return take(r, known, timeMs);
    if (known === null) return; // a gone service's late requests
    (known ?? lookUp(r.serviceId))
      .then((workspaceId) => workspaceId && take(r, workspaceId, timeMs))
      .catch(deps.onError);
  };
}
