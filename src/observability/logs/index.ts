import type { WebSocket } from 'ws';
import type { RequestRecord } from '../../router/router.js';
import { logLinesDropped, logLinesIngested } from '../prometheus.js';
import type { LogRepo, NewLogEntry } from '../../store/repos/logs.js';
import { createLogBudget, dropNotice, type DropReport } from './budget.js';
import { createLogCollector, type TailedInstance } from './collector.js';
import type { ParsedLogFilter } from './filters.js';
import { createLogHub } from './hub.js';
import { createLineSplitter, levelOf } from './lines.js';
import { createLogReader } from './read.js';
import { createLogSink } from './sink.js';
import { openLogStream, type SubscribeFrom } from './stream.js';
import type { Logger } from '../../lib/logger.js';

export interface LogsDeps {
  repo: LogRepo;
  /** The workspace of a service (request entries carry only the service id); undefined when it is gone. */
  workspaceOf(serviceId: string): Promise<string | undefined>;
  instances(): Promise<TailedInstance[]>;
  instanceDir(serviceId: string, instanceId: string): string;
  /** Postgres: other Slipway processes share the store (NOTIFY on write, LISTEN via `listen`). */
  shared: boolean;
  settings: {
    pollMs: number;
    flushMs: number;
    streamBufferBytes: number;
    pingMs: number;
    /** Per service: app lines a second, and the burst above it (SLIPWAY_LOG_RATE_LINES / SLIPWAY_LOG_BURST_LINES). */
    rateLines: number;
    burstLines: number;
  };
  /** A service's lines were dropped over its budget (at most once per DROP_REPORT_MS each): record the event. */
  onLinesDropped(report: DropReport): Promise<void>;
  log: Logger;
}

/** Drops are reported at most this often per service. */
const DROP_REPORT_MS = 5000;

/** The log store's moving parts: the file collector, build and request logging, the fan-out hub, subscriptions. */
export function createLogs(deps: LogsDeps) {
  const { repo, settings } = deps;
  const hub = createLogHub({ repo, pollMs: deps.shared ? 1000 : 5000, log: deps.log });
  const sink = createLogSink({
    // Only PGlite is not shared: it runs in this process.
    repo,
    flushMs: settings.flushMs,
    shared: deps.shared,
    inProcess: !deps.shared,
    log: deps.log,
    onCommitted: (rows) => {
      // One inc per type and batch: prom-client's labelled inc() per row was a visible cost at thousands of rows a second.
      const byType = new Map<string, number>();
      for (const row of rows) byType.set(row.type, (byType.get(row.type) ?? 0) + 1);
      for (const [type, n] of byType) logLinesIngested.inc({ type }, n);
      hub.written(rows);
    },
  });
  const budget = createLogBudget({
    ratePerSec: settings.rateLines,
    burst: settings.burstLines,
    reportMs: DROP_REPORT_MS,
    onDrop: (lines) => logLinesDropped.inc(lines),
    onReport: (r) => {
      // The notice goes in the service's own log (past the budget: it is what says lines are missing).
      sink.push([
        {
          workspaceId: r.workspaceId,
          resourceId: r.serviceId,
          instanceId: r.instanceId,
          deployId: r.deployId,
          type: 'app',
          level: 'warn',
          message: dropNotice(r),
          timeMs: Date.now(),
        },
      ]);
      deps
        .onLinesDropped(r)
        .catch((err) => deps.log.warn({ err, serviceId: r.serviceId }, 'log_lines_dropped event failed'));
    },
  });
  const collector = createLogCollector({
    repo,
    sink,
    budget,
    instances: deps.instances,
    instanceDir: deps.instanceDir,
    pollMs: settings.pollMs,
    log: deps.log,
  });
  // The lookup itself is kept, not its result: the access log read after a restart hands on thousands of a service's
  // requests at once, and they share one query instead of each sending its own.
  const workspaces = new Map<string, Promise<string | undefined>>();
  function workspaceOf(serviceId: string): Promise<string | undefined> {
    let found = workspaces.get(serviceId);
    if (!found) {
      found = deps.workspaceOf(serviceId);
      workspaces.set(serviceId, found);
      found.catch(() => workspaces.delete(serviceId)); // the store failed: asked again next time
    }
    return found;
  }

  async function requestEntry(r: RequestRecord, timeMs: number): Promise<NewLogEntry | undefined> {
    const workspaceId = await workspaceOf(r.serviceId);
    if (!workspaceId) return undefined;
    const path = r.path.slice(0, 2048);
    return {
      workspaceId,
      resourceId: r.serviceId,
      instanceId: r.instanceId ?? null,
      type: 'request',
      level: r.statusCode >= 500 ? 'error' : 'info',
      message: `${r.method} ${path} ${r.statusCode} ${r.durationMs.toFixed(1)}ms ${r.bytesOut}B`,
      method: r.method.slice(0, 32),
      path,
      statusCode: r.statusCode,
      host: r.host.slice(0, 255),
      durationMs: r.durationMs,
      bytes: r.bytesOut,
      timeMs,
    };
  }

  const reader = createLogReader({ repo, workspaceOf: deps.workspaceOf });

  return {
    hub,
    /** The checked filter of a log query in a workspace, and a page of what it finds (read.ts). */
    filterFor: reader.filterFor,
    page: reader.page,
    async start() {
      await hub.start();
      collector.start();
    },
    /** Stops collecting and writes what is pending. */
    async close() {
      await collector.stop();
      budget.reportDue(true);
      await sink.close();
      await hub.close();
    },
    /** A new instance writes output: look for it now rather than at the next refresh. */
    instanceSpawned: () => collector.refreshSoon(),
    /** Stores the rest of a stopped instance's output before its files go (cron runs). */
    async collectRest(instance: Omit<TailedInstance, 'active'>) {
      await collector.collectRest(instance);
      await sink.flush();
    },
    /** The router's per-request hook (type `request`). */
    onRequest(r: RequestRecord) {
      requestEntry(r, Date.now())
        .then((e) => e && sink.push([e]))
        .catch((err) => deps.log.warn({ err }, 'request log failed'));
    },
    /** Build and pre-deploy output of one deploy (type `build`), fed in chunks; `end()` flushes an unfinished last line. */
    buildLog(service: { id: string; workspaceId: string }, deployId: string) {
      const splitter = createLineSplitter();
      const push = (lines: string[]) =>
        sink.push(
          lines.map((message) => ({
            workspaceId: service.workspaceId,
            resourceId: service.id,
            deployId,
            type: 'build' as const,
            level: levelOf(message, 'info'),
            message,
            timeMs: Date.now(),
          })),
        );
      return {
        write: (chunk: string) => push(splitter.push(Buffer.from(chunk, 'utf8'))),
        end: () => push(splitter.flush()),
      };
    },
    /** Serves one WebSocket subscription (validated and authorized by the caller). */
    subscribe(socket: WebSocket, parsed: ParsedLogFilter, from: SubscribeFrom) {
      openLogStream({ hub, repo, bufferBytes: settings.streamBufferBytes, pingMs: settings.pingMs }, socket, {
        parsed,
        ...from,
      });
    },
  };
}
export type Logs = ReturnType<typeof createLogs>;
