import type { WebSocket } from 'ws';
import { logLinesDropped, logLinesIngested } from '../prometheus.js';
import type { LogRepo } from '../../store/repos/logs.js';
import { createLogBudget, dropNotice, type DropReport } from './budget.js';
import { createLogCollector, type TailedInstance } from './collector.js';
import type { ParsedLogFilter } from './filters.js';
import { createLogHub } from './hub.js';
import { createLineSplitter, levelOf } from './lines.js';
import type { QueryBudget } from './query.js';
import { createLogReader } from './read.js';
import { createRequestLog } from './requests.js';
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
    /** What one filtered GET /v1/logs may read (query.ts). */
    queryBudget: QueryBudget;
    /** Per service: app lines a second, and the burst above it (SLIPWAY_LOG_RATE_LINES / SLIPWAY_LOG_BURST_LINES). */
    rateLines: number;
    burstLines: number;
    /** Per service: request lines a second, and the burst (SLIPWAY_REQUEST_LOG_RATE_LINES / _BURST_LINES). */
    requestRateLines: number;
    requestBurstLines: number;
  };
  /** A service's lines were dropped over its budget (at most once per DROP_REPORT_MS each): record the event. */
  onLinesDropped(report: DropReport & { type: 'app' | 'request' }): Promise<void>;
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
  /** A budget per service for one type of lines; its notices go in the service's own log, as that type. */
  const budgetFor = (type: 'app' | 'request', ratePerSec: number, burst: number) =>
    createLogBudget({
      ratePerSec,
      burst,
      reportMs: DROP_REPORT_MS,
      onDrop: (lines) => logLinesDropped.inc(lines),
      onReport: (r) => {
        // The notice goes past the budget: it is what says lines are missing.
        sink.push([
          {
            workspaceId: r.workspaceId,
            resourceId: r.serviceId,
            instanceId: r.instanceId,
            deployId: r.deployId,
            type,
            level: 'warn',
            message: dropNotice(r, type === 'request' ? 'request log lines' : 'log lines'),
            timeMs: Date.now(),
          },
        ]);
        deps
          .onLinesDropped({ ...r, type })
          .catch((err) => deps.log.warn({ err, serviceId: r.serviceId }, 'log_lines_dropped event failed'));
      },
    });
  const budget = budgetFor('app', settings.rateLines, settings.burstLines);
  const requestBudget = budgetFor('request', settings.requestRateLines, settings.requestBurstLines);
  let requestReports: NodeJS.Timeout | undefined;
  const collector = createLogCollector({
    repo,
    sink,
    budget,
    instances: deps.instances,
    instanceDir: deps.instanceDir,
    pollMs: settings.pollMs,
    log: deps.log,
  });
  const reader = createLogReader({ repo, workspaceOf: deps.workspaceOf, budget: settings.queryBudget });

  return {
    hub,
    /** The checked filter of a log query in a workspace, and a page of what it finds (read.ts). */
    filterFor: reader.filterFor,
    page: reader.page,
    /** Render's GET /logs/values (values.ts). */
    values: reader.values,
    async start() {
      await hub.start();
      collector.start();
      // The collector's loop sends the app budget's reports; requests arrive from the router, so these go on a timer.
      requestReports = setInterval(() => requestBudget.reportDue(), DROP_REPORT_MS / 5);
      requestReports.unref();
    },
    /** Stops collecting and writes what is pending. */
    async close() {
      clearInterval(requestReports);
      await collector.stop();
      budget.reportDue(true);
      requestBudget.reportDue(true);
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
    onRequest: createRequestLog({
      budget: requestBudget,
      push: (entry) => sink.push([entry]),
      workspaceOf: deps.workspaceOf,
      onError: (err) => deps.log.warn({ err }, 'request log failed'),
    }),
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
