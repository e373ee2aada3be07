import type { FairSlots, Release as SlotRelease } from '../../lib/fair-slots.js';
import type { Limits } from '../../model/limits.js';
import type { Runtime } from '../../runtime/types.js';
import type { Logger } from '../../lib/logger.js';
import { IN_PROGRESS, PENDING, type DeployRow, type DeployStatus } from '../../store/repos/deploys.js';
import type { Repos, Transact } from '../../store/repos/index.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { Events } from '../events.js';
import type { Release } from '../instances/instances.js';
import type { Lifecycle } from '../service-state/lifecycle.js';
import { buildEndedDetails, DeployFailure, deployEndedDetails } from '../service-state/failures.js';
import type { BuildLog } from '../builds/build-step.js';
import type { createBuilder } from '../builds/pipeline.js';
import { runPreDeploy } from './pre-deploy.js';
import type { RollOver } from '../instances/rollover.js';
import { renderTrigger } from '../render-events.js';

/**
 * One deploy's steps, each a status and its events: build (pipeline.ts), pre-deploy (pre-deploy.ts), then go live
 * (rollover.ts) and collect old artifacts (gc.ts). A failure ends the deploy in the status of its step; the previous
 * deploy stays live.
 */
export function createDeployRunner(deps: {
  repos: Pick<Repos, 'services' | 'deploys'>;
  transact: Transact;
  runtime: Runtime;
  events: Events;
  lifecycle: Lifecycle;
  limits: { buildTimeoutMs: number; buildPlans: Record<'starter' | 'performance', Limits> };
  /** Builds at once, shared fairly between workspaces (docs/deploys.md, "Build limits"). */
  buildSlots: FairSlots;
  log: Logger;
  build: ReturnType<typeof createBuilder>;
  envFor(service: ServiceRow, deploy: DeployRow): Promise<Record<string, string>>;
  releaseOf(service: ServiceRow, deploy: DeployRow): Release;
  rollOver: RollOver;
  collectGarbage(serviceId: string): Promise<void>;
  buildLog?: BuildLog;
  onBuildEnded?(service: ServiceRow, deployId: string, startedAt: Date, endedAt: Date): Promise<void> | void;
  onDeployEnded?(status: DeployStatus, deploy: DeployRow): void;
}) {
  const { repos, runtime, events, lifecycle, log } = deps;
  const about = (service: ServiceRow, deploy: DeployRow) => ({
    workspaceId: service.workspaceId,
    serviceId: service.id,
    deployId: deploy.id,
  });
  /** A status change and its events in one transaction (the outbox): a crash keeps both or neither. */
  async function transitionWith(
    service: ServiceRow,
    deploy: DeployRow,
    change: (tx: Parameters<Parameters<Transact>[0]>[0]) => Promise<boolean>,
    recorded: Array<{ type: string; details?: Record<string, unknown> }>,
  ): Promise<boolean> {
    const done = await deps.transact(async (tx) => {
      if (!(await change(tx))) return false;
      for (const e of recorded) await events.record({ ...about(service, deploy), ...e }, tx.events);
      return true;
    });
    if (done) events.poke();
    return done;
  }

  /**
   * A build slot for the deploy, weighed by its build plan's memory: at once, or after waiting `queued` (Render's
   * status) behind other workspaces' builds and this workspace's share. Undefined when the deploy left `created`
   * meanwhile (canceled).
   */
  async function buildSlot(service: ServiceRow, deploy: DeployRow, signal: AbortSignal): Promise<SlotRelease> {
    let queued: Promise<unknown> | undefined;
    const release = await deps.buildSlots.acquire(service.workspaceId, {
      weight: deps.limits.buildPlans[service.details.buildPlan ?? 'starter'].memoryMb,
      signal,
      onWait: () => void (queued = repos.deploys.transition(deploy.id, ['created'], 'queued')),
    });
    await queued;
    return release;
  }

  async function goLive(serviceId: string, deploy: DeployRow, signal: AbortSignal) {
    await deps.rollOver(serviceId, deploy, signal, (service) =>
      deps.transact(async (tx) => {
        const live = await tx.deploys.transition(deploy.id, ['update_in_progress'], 'live');
        if (!live) throw new DeployFailure('canceled', 'canceled before going live');
        if (service.liveDeployId && service.liveDeployId !== deploy.id)
          await tx.deploys.transition(service.liveDeployId, ['live'], 'deactivated');
        // A healthy new deploy ends a crash loop.
        const suspenders = service.suspenders.filter((s) => s !== 'stuck_crashlooping');
        const updated = (await tx.services.update(service.id, { liveDeployId: deploy.id, suspenders }))!;
        await events.record(
          { ...about(service, deploy), type: 'deploy_ended', details: { status: 'live' } },
          tx.events,
        );
        return updated;
      }),
    );
    events.poke();
  }

  return async function runDeploy(serviceId: string, deploy: DeployRow) {
    const signal = lifecycle.deployStarted(serviceId, deploy.id);
    let service!: ServiceRow;
    let phase: DeployStatus = 'build_failed';
    let building = false; // between build_started and build_ended: a failure owes the build its end
    let releaseSlot: SlotRelease | undefined;
    try {
      const found = await repos.services.get(serviceId);
      if (!found) return;
      service = found;
      if (!deploy.artifactOf) {
        releaseSlot = await buildSlot(service, deploy, signal);
        const started = await transitionWith(
          service,
          deploy,
          async (tx) =>
            !!(await tx.deploys.transition(deploy.id, PENDING, 'build_in_progress', { startedAt: new Date() })),
          [{ type: 'build_started', details: { trigger: renderTrigger(deploy, !service.liveDeployId) } }],
        );
        if (!started) return;
        building = true;
        const buildStart = new Date();
        const { startCommand, commit, toolchain } = await deps
          .build(service, deploy, signal)
          .finally(() => deps.onBuildEnded?.(service, deploy.id, buildStart, new Date()));
        await transitionWith(
          service,
          deploy,
          async (tx) => {
            await tx.deploys.update(deploy.id, {
              startCommand: startCommand ?? null,
              toolchain: toolchain ?? null,
              ...commit,
            });
            return true;
          },
          [{ type: 'build_ended', details: { status: 'succeeded' } }],
        );
        deploy = (await repos.deploys.get(deploy.id))!;
        building = false;
        releaseSlot();
      }
      const details = service.details;
      if (details.preDeployCommand && !deploy.artifactOf) {
        phase = 'pre_deploy_failed';
        if (!(await repos.deploys.transition(deploy.id, ['build_in_progress'], 'pre_deploy_in_progress')))
          throw new DeployFailure('canceled', 'canceled');
        await runPreDeploy(
          { runtime, timeoutMs: deps.limits.buildTimeoutMs, buildLog: deps.buildLog },
          deps.releaseOf(service, deploy),
          await deps.envFor(service, deploy),
          signal,
        );
      }
      phase = 'update_failed';
      const from: DeployStatus[] = deploy.artifactOf ? PENDING : ['build_in_progress', 'pre_deploy_in_progress'];
      if (
        !(await repos.deploys.transition(
          deploy.id,
          from,
          'update_in_progress',
          deploy.startedAt ? {} : { startedAt: new Date() },
        ))
      )
        return;
      await goLive(serviceId, deploy, signal);
      deps.onDeployEnded?.('live', deploy);
      // Off the critical path: the next deploy need not wait for it.
      lifecycle.tidy(serviceId, 'artifacts', () =>
        deps
          .collectGarbage(serviceId)
          .catch((err: Error) => log.warn({ serviceId, err: err.message }, 'collecting old artifacts failed')),
      );
    } catch (err) {
      const failure = signal.aborted
        ? new DeployFailure('canceled', 'canceled')
        : err instanceof DeployFailure
          ? err
          : new DeployFailure(phase, (err as Error).message);
      log.warn({ serviceId, deployId: deploy.id, status: failure.status, reason: failure.message }, 'deploy failed');
      const fail = async (tx: Pick<Repos, 'deploys'>) =>
        !!(await tx.deploys.transition(deploy.id, [...PENDING, ...IN_PROGRESS], failure.status, {
          failureReason: failure.message,
        }));
      if (!service) await fail(repos);
      else
        await transitionWith(service, deploy, fail, [
          ...(building ? [{ type: 'build_ended', details: buildEndedDetails(failure) }] : []),
          { type: 'deploy_ended', details: deployEndedDetails(failure) },
        ]);
      deps.onDeployEnded?.(failure.status, deploy);
    } finally {
      releaseSlot?.();
      lifecycle.deployEnded(serviceId);
    }
  };
}
