import { badRequest } from '../../lib/errors.js';
import { tickLoop } from '../../lib/tick-loop.js';
import type { Logger } from '../../lib/logger.js';
import { MAX_INSTANCES, PLAN_LIMITS, type Autoscaling } from '../../model/services.js';
import type { Repos } from '../../store/repos/index.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { Events } from '../events.js';

/** Service types that run instances to scale. */
const SCALABLE = new Set(['web_service', 'private_service', 'background_worker']);
/** Within 10 % of its target a service is left as it is (Kubernetes' HPA tolerance): no flapping around it. */
const TOLERANCE = 0.1;

/**
 * A PUT (`a`) or DELETE (null) of Render's autoscaling: the details' change (numInstances brought within min..max) and
 * Render's autoscaling_config_changed event's details.
 */
export function autoscalingChange(service: ServiceRow, a: Autoscaling | null) {
  const before = service.details.autoscaling;
  const to = a ? checkAutoscaling(service, a, MAX_INSTANCES) : null;
  const n = service.details.numInstances;
  const numInstances = to?.enabled ? Math.min(to.max, Math.max(to.min, n)) : n;
  return {
    serviceDetails: { autoscaling: to, ...(numInstances !== n ? { numInstances } : {}) },
    event: {
      ...(before ? { fromConfig: before } : {}),
      toConfig: to ?? { ...(before ?? { min: 1, max: 1, criteria: OFF }), enabled: false },
    },
  };
}
const OFF = { cpu: { enabled: false, percentage: 0 }, memory: { enabled: false, percentage: 0 } };

/** Render's autoscaling body checked: min ≤ max within 1..`maxInstances`, targets 1–100 %, one criterion at least. */
export function checkAutoscaling(service: ServiceRow, a: Autoscaling, maxInstances: number): Autoscaling {
  if (!SCALABLE.has(service.type)) throw badRequest(`a ${service.type} runs no instances to autoscale`);
  if (a.min < 1 || a.max > maxInstances || a.min > a.max)
    throw badRequest(`autoscaling needs 1 <= min <= max <= ${maxInstances}`);
  const { cpu, memory } = a.criteria;
  for (const [name, c] of Object.entries({ cpu, memory }))
    if (c.enabled && (c.percentage < 1 || c.percentage > 100))
      throw badRequest(`autoscaling.criteria.${name}.percentage must be 1 to 100`);
  if (a.enabled && !cpu.enabled && !memory.enabled)
    throw badRequest('autoscaling needs criteria.cpu or criteria.memory enabled');
  return a;
}

/** The instance count `a` asks for at this utilization (percent of the plan), or `current` within the tolerance. */
export function desiredInstances(a: Autoscaling, current: number, usage: { cpu: number; memory: number }): number {
  const wanted = (['cpu', 'memory'] as const)
    .filter((k) => a.criteria[k].enabled)
    .map((k) => {
      const ratio = usage[k] / a.criteria[k].percentage;
      return Math.abs(ratio - 1) <= TOLERANCE ? current : Math.ceil(current * ratio);
    });
  return Math.min(a.max, Math.max(a.min, ...wanted));
}

export interface AutoscalerDeps {
  repos: Pick<Repos, 'services' | 'metrics'>;
  events: Events;
  log: Logger;
  /** Applies a new count (the services' update: it records instance_count_changed; the supervisor starts or stops). */
  scale(service: ServiceRow, numInstances: number): Promise<unknown>;
  /** How often it looks, and how long after a change before the next up or down. */
  intervalMs: number;
  upCooldownMs: number;
  downCooldownMs: number;
  /** How old a metrics sample may be to count (two sampling intervals). */
  sampleMaxAgeMs: number;
  /** How long after an instance starts before its samples count (its start-up CPU is not load). */
  warmupMs: number;
}

/**
 * Scales services with autoscaling enabled on their instances' measured CPU and memory (the metrics sampler's newest
 * samples), as a share of the plan's, toward the targets: up after `upCooldownMs` since the last change, down after
 * `downCooldownMs`. Each change is Render's autoscaling_started, then autoscaling_ended once it has that many.
 */
export function createAutoscaler(deps: AutoscalerDeps) {
  const lastChange = new Map<string, number>();
  const underway = new Map<string, { fromInstances: number; toInstances: number }>();

  async function tickService(service: ServiceRow, now: number) {
    const a = service.details.autoscaling!;
    const current = service.details.numInstances;
    const samples = await deps.repos.metrics.latest(service.id, new Date(now - deps.sampleMaxAgeMs), deps.warmupMs);
    const change = underway.get(service.id);
    if (change && samples.length === change.toInstances) {
      underway.delete(service.id);
      await deps.events.record({
        workspaceId: service.workspaceId,
        serviceId: service.id,
        type: 'autoscaling_ended',
        details: change,
      });
    }
    if (samples.length === 0) return;
    const limits = PLAN_LIMITS[service.details.plan];
    const average = (f: (s: (typeof samples)[number]) => number) =>
      samples.reduce((n, s) => n + f(s), 0) / samples.length;
    // cpuPercent is of one core; the plan's share of a core is cpuMillicores / 1000.
    const usage = {
      cpu: (average((s) => s.cpuPercent) * 1000) / limits.cpuMillicores,
      memory: (average((s) => s.cgroupMemoryBytes ?? s.memoryBytes) / (limits.memoryMb * 1024 * 1024)) * 100,
    };
    const wanted = desiredInstances(a, current, usage);
    const since = now - (lastChange.get(service.id) ?? 0);
    if (wanted === current || since < (wanted > current ? deps.upCooldownMs : deps.downCooldownMs)) return;
    lastChange.set(service.id, now);
    const details = {
      fromInstances: current,
      toInstances: wanted,
      currentCPU: Math.round(usage.cpu),
      targetCPU: a.criteria.cpu.percentage,
      currentMemory: Math.round(usage.memory),
      targetMemory: a.criteria.memory.percentage,
    };
    deps.log.info({ serviceId: service.id, ...details }, 'autoscaling');
    await deps.events.record({
      workspaceId: service.workspaceId,
      serviceId: service.id,
      type: 'autoscaling_started',
      details,
    });
    underway.set(service.id, { fromInstances: current, toInstances: wanted });
    await deps.scale(service, wanted);
  }

  async function tick() {
    const now = Date.now();
    const autoscaled = await deps.repos.services.autoscaled();
    // What it kept of services no longer autoscaled (deleted, or autoscaling removed) goes.
    const ids = new Set(autoscaled.map((s) => s.id));
    for (const map of [lastChange, underway]) for (const id of map.keys()) if (!ids.has(id)) map.delete(id);
    for (const service of autoscaled) {
      if (!service.liveDeployId || service.suspenders.length > 0) continue;
      await tickService(service, now).catch((err: Error) =>
        deps.log.error({ serviceId: service.id, err: err.message }, 'autoscaling check failed'),
      );
    }
  }

  return { tick, ...tickLoop(tick, deps.intervalMs, (err) => deps.log.error({ err }, 'autoscaling check failed')) };
}
export type Autoscaler = ReturnType<typeof createAutoscaler>;
