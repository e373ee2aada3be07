import type { InstanceRow } from '../../store/repos/instances.js';
import { routerInstanceId, type MetricSampleInsert } from '../../store/repos/metrics.js';
import {
  cgroupMemoryFile,
  childrenIndex,
  CLOCK_TICKS_PER_SECOND,
  readNumberFile,
  scanProcesses,
  treeUsage,
  uptimeSeconds,
} from './procfs.js';
import type { Logger } from '../../lib/logger.js';
import type { HttpBreakdown } from './http-breakdown.js';

export interface SamplerDeps {
  /** Instances that have (or may have) a process. */
  activeInstances(): Promise<Pick<InstanceRow, 'id' | 'serviceId' | 'status' | 'pid' | 'startTime'>[]>;
  insert(rows: MetricSampleInsert[]): Promise<void>;
  intervalMs: number;
  log: Pick<Logger, 'warn'>;
  now?: () => Date;
}

interface Previous {
  cpuTicks: number;
  at: number;
  pid: number;
  startTime: string | null;
}

/** Requests and bytes the router served per service since the last tick. */
export function createTrafficCounter() {
  let counts = new Map<string, { requests: number; bytes: number }>();
  return {
    /** Called by the router once per finished request (cheap: two additions). */
    record(serviceId: string, bytes: number) {
      const c = counts.get(serviceId);
      if (c) {
        c.requests++;
        c.bytes += bytes;
      } else counts.set(serviceId, { requests: 1, bytes });
    },
    /** The counts so far, starting a new interval. */
    drain() {
      const taken = counts;
      counts = new Map();
      return taken;
    },
  };
}
export type TrafficCounter = ReturnType<typeof createTrafficCounter>;

/**
 * Samples every running instance each interval: CPU (percent of one core since the last tick)
 * and memory (RSS of the process tree, and the cgroup's usage where the runtime made one),
 * from one /proc scan for all instances, written in one insert together with the router's
 * request and byte counts.
 */
export function createMetricsSampler(deps: SamplerDeps & { traffic: TrafficCounter; http?: HttpBreakdown }) {
  const previous = new Map<string, Previous>();
  const cgroupFiles = new Map<string, string | undefined>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function tick(): Promise<number> {
    const now = deps.now?.() ?? new Date();
    const at = performance.now();
    const instances = (await deps.activeInstances()).filter((i) => i.status === 'running' && i.pid);
    const processes = scanProcesses();
    const children = childrenIndex(processes);
    const rows: MetricSampleInsert[] = [];
    const seen = new Set<string>();
    for (const instance of instances) {
      const usage = treeUsage(processes, children, { pid: instance.pid!, startTime: instance.startTime });
      if (!usage) continue;
      seen.add(instance.id);
      const before = previous.get(instance.id);
      let cpuPercent: number;
      if (before && before.pid === instance.pid && before.startTime === instance.startTime && at > before.at) {
        cpuPercent = ((usage.cpuTicks - before.cpuTicks) / CLOCK_TICKS_PER_SECOND / ((at - before.at) / 1000)) * 100;
      } else {
        // First sight of this process: its average since it started.
        const lifetime =
          uptimeSeconds() - Number(processes.get(instance.pid!)?.startTime ?? 0) / CLOCK_TICKS_PER_SECOND;
        cpuPercent = lifetime > 0 ? (usage.cpuTicks / CLOCK_TICKS_PER_SECOND / lifetime) * 100 : 0;
      }
      previous.set(instance.id, { cpuTicks: usage.cpuTicks, at, pid: instance.pid!, startTime: instance.startTime });
      if (!cgroupFiles.has(instance.id)) cgroupFiles.set(instance.id, cgroupMemoryFile(instance.pid!));
      const cgroupFile = cgroupFiles.get(instance.id);
      rows.push({
        serviceId: instance.serviceId,
        instanceId: instance.id,
        resolution: 0,
        timestamp: now,
        cpuPercent: Math.max(0, Math.round(cpuPercent * 100) / 100),
        memoryBytes: usage.rssBytes,
        cgroupMemoryBytes: cgroupFile ? (readNumberFile(cgroupFile) ?? null) : null,
      });
    }
    for (const id of previous.keys())
      if (!seen.has(id)) {
        previous.delete(id);
        cgroupFiles.delete(id);
      }
    for (const [serviceId, c] of deps.traffic.drain()) {
      rows.push({
        serviceId,
        instanceId: routerInstanceId(serviceId),
        resolution: 0,
        timestamp: now,
        cpuPercent: c.requests,
        memoryBytes: c.bytes,
      });
    }
    if (deps.http) rows.push(...deps.http.drain(now));
    await deps.insert(rows);
    return rows.length;
  }

  const safeTick = async () => {
    try {
      await tick();
    } catch (err) {
      deps.log.warn({ err }, 'metrics sampler: tick failed');
    }
  };

  return {
    tick,
    start() {
      // setTimeout after each tick, not setInterval: a slow store never stacks ticks up.
      const loop = () => {
        timer = setTimeout(() => {
          running = safeTick().finally(() => {
            running = undefined;
            if (timer) loop();
          });
        }, deps.intervalMs);
      };
      loop();
    },
    async stop() {
      clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
export type MetricsSampler = ReturnType<typeof createMetricsSampler>;
