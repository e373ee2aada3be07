import { rmSync } from 'node:fs';
import path from 'node:path';
import { conflict, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { Runtime } from '../../runtime/types.js';
import type { DeployTrigger } from '../../store/enums.js';
import { IN_PROGRESS, PENDING, type DeployRow, type DeployStatus } from '../../store/repos/deploys.js';
import type { Repos, Transact } from '../../store/repos/index.js';
import type { InstanceRow } from '../../store/repos/instances.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { Events } from '../events.js';
import type { EnvLayer } from '../env-groups.js';
import type { DeployPort } from '../services/services.js';
import { mergeEnv, platformEnv, type AppUrls } from './env.js';
import { createInstances, type Release } from './instances.js';
import type { Layout } from './layout.js';
import {
  buildEndedDetails,
  commandFailure,
  createBuilder,
  DeployFailure,
  deployEndedDetails,
  type BuildLog,
  type PipelineLimits,
} from './pipeline.js';
import { failInterruptedDeploys } from './interrupted.js';
import type { RouteTable } from './route-table.js';
import { createCronRunner } from './cron.js';
import { createGarbageCollector } from './gc.js';
import { createKeyedLocks } from '../../lib/keyed-locks.js';
import { createSupervisor } from './supervisor.js';

/** A pre-deploy command's resources, whatever the service's plan (a migration, not the app). */
const PRE_DEPLOY_LIMITS = { memoryMb: 1024, cpuMillicores: 1000, pids: 2048, diskMb: 2048 };

export interface EngineDeps {
  repos: Pick<Repos, 'services' | 'deploys' | 'instances'>;
  transact: Transact;
  runtime: Runtime;
  layout: Layout;
  routes: RouteTable;
  events: Events;
  /** The service's variables above the platform's, in precedence order. */
  layersOf(serviceId: string): Promise<EnvLayer[]>;
  urls: AppUrls;
  limits: PipelineLimits & {
    healthTimeoutMs: number;
    keepArtifacts: number;
    crashCheckMs: number;
    crashBackoffMs: number;
  };
  log: { info(o: object, m?: string): void; warn(o: object, m?: string): void; error(o: object, m?: string): void };
  /** Build and pre-deploy output lines (the log store). */
  buildLog?: BuildLog;
  /** Told of every deploy that reaches a final status (Prometheus counters). */
  onDeployEnded?(status: DeployStatus, deploy: DeployRow): void;
  /** Told of every build that ran, succeeded or not (the usage meter's build-seconds). */
  onBuildEnded?(service: ServiceRow, deployId: string, startedAt: Date, endedAt: Date): Promise<void> | void;
  /** Runs when a removed service's processes have stopped, before its rows go (the usage meter's last pass). */
  onRemoved?(): Promise<void>;
  /** Told as soon as an instance's process is spawned (the log collector). */
  onInstanceSpawned?(): void;
  /** Stores the rest of a finished cron run's output before its dir is removed (the log store). */
  collectOutput?(run: { instanceId: string; serviceId: string; workspaceId: string; deployId: string }): Promise<void>;
}

/**
 * Runs deploys one at a time per service (newest pending wins), moves the live pointer,
 * restarts, suspends and removes services, and re-adopts everything after a restart.
 */
export function createDeployEngine(deps: EngineDeps) {
  const { repos, runtime, layout, routes, events, log } = deps;
  const instances = createInstances({
    repo: repos.instances,
    runtime,
    layout,
    healthTimeoutMs: deps.limits.healthTimeoutMs,
    onSpawned: deps.onInstanceSpawned,
    onExited: (instanceId) => routes.dropInstance(instanceId),
  });
  const envFor = async (service: ServiceRow, deploy: DeployRow | undefined, instance?: { id: string; port?: number }) =>
    mergeEnv(platformEnv(service, deploy, deps.urls, instance), await deps.layersOf(service.id));
  const build = createBuilder({
    repo: repos.deploys,
    runtime,
    layout,
    limits: deps.limits,
    buildEnv: (s, d) => envFor(s, d),
    buildLog: deps.buildLog,
  });
  const current = new Map<string, { deployId: string; abort: AbortController }>();
  const loops = new Map<string, { dirty: boolean }>();
  const stopping = new Set<string>();
  const removing = new Set<string>();
  /** Writes under a service's dir outside its lock (uploads): its deletion waits for them. */
  const writes = new Set<{ serviceId: string; done: Promise<unknown> }>();
  const withServiceLock = createKeyedLocks();
  /** A service being deleted is gone for requests: 404, as once its row is. */
  const assertPresent = (serviceId: string) => {
    if (removing.has(serviceId)) throw notFound('service');
  };
  /** Rolls the live deploy over for a request (restart, resume); a deletion begun before or during it is a 404. */
  const rollOverLive = (serviceId: string) =>
    rollOver(serviceId, undefined, undefined, async (fresh) => fresh).catch((err: unknown) => {
      if (err instanceof DeployFailure && removing.has(serviceId)) throw notFound('service');
      throw err;
    });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  const artifactOwner = (d: DeployRow) => d.artifactOf ?? d.id;
  const releaseOf = (service: ServiceRow, deploy: DeployRow): Release => ({
    service,
    deploy,
    artifactDir: layout.artifactDir(service.id, artifactOwner(deploy)),
    startCommand: deploy.startCommand ?? '',
    env: (instance) => envFor(service, deploy, instance),
  });

  /** Points the router at the service's live deploy, or at `deploy` when it is about to become live. */
  async function refreshRoute(service: ServiceRow, deploy?: DeployRow) {
    if (removing.has(service.id)) return void routes.remove(service.slug);
    const details = service.details;
    if (service.suspenders.includes('user')) return routes.setSuspended(service.slug, service.id);
    const live = deploy ?? (await repos.deploys.liveOf(service));
    if (service.type === 'static_site') {
      if (live)
        return routes.setStatic(
          service.slug,
          service.id,
          path.join(layout.artifactDir(service.id, artifactOwner(live)), service.rootDir, details.publishPath),
        );
      return routes.setInstances(service.slug, service.id, []);
    }
    if (service.type !== 'web_service') return;
    const rows = live ? await instances.active({ deployId: live.id }) : [];
    // Alive, not just `running` in the store: a crashed instance waits there for its restart, and its address must not be routed meanwhile.
    const upstreams = rows
      .filter((r) => r.status === 'running' && r.port && !stopping.has(r.id) && instances.isAlive(r))
      .map((r) => ({ host: runtime.addressOf(r.id), port: r.port!, instanceId: r.id }));
    routes.setInstances(service.slug, service.id, upstreams);
  }

  async function stopInstances(rows: InstanceRow[], graceMs: number) {
    rows.forEach((r) => stopping.add(r.id));
    try {
      await instances.stop(rows, graceMs);
    } finally {
      rows.forEach((r) => stopping.delete(r.id));
    }
  }
  const graceOf = (service: ServiceRow) => service.details.maxShutdownDelaySeconds * 1000;

  /**
   * Starts the release's instances, switches traffic to them, then drains and stops the others.
   * Under the service's lock, on the service as it is now (`deploy` undefined: its live deploy).
   */
  function rollOver(
    serviceId: string,
    deploy: DeployRow | undefined,
    signal: AbortSignal | undefined,
    switchPointer: (s: ServiceRow) => Promise<ServiceRow>,
  ) {
    return withServiceLock(serviceId, async () => {
      const service = await repos.services.get(serviceId);
      if (!service || removing.has(serviceId)) throw new DeployFailure('canceled', 'the service was deleted');
      const release = deploy ?? (await repos.deploys.liveOf(service));
      if (!release) throw conflict('the service has no live deploy');
      const needsProcesses = service.type !== 'static_site' && service.type !== 'cron_job';
      const before = await instances.active({ serviceId });
      const started =
        needsProcesses && !service.suspenders.includes('user')
          ? await instances
              .start(releaseOf(service, release), service.details.numInstances, signal)
              .catch((err: Error) => {
                throw new DeployFailure('update_failed', `instances did not become healthy: ${err.message}`);
              })
          : [];
      let switched: ServiceRow;
      try {
        if (signal?.aborted) throw new DeployFailure('canceled', 'canceled before going live');
        // Traffic moves before the deploy is reported live, so whoever sees `live` reaches it.
        await refreshRoute(service, release);
        switched = await switchPointer(service);
      } catch (err) {
        await refreshRoute(service); // back to what is still live
        await stopInstances(started, 1000);
        throw err;
      }
      before.forEach((r) => stopping.add(r.id)); // out of the route before they are stopped
      await refreshRoute(switched);
      drain(stopInstances(before, graceOf(service)));
      return switched;
    });
  }

  // Old instances drain (SIGTERM, up to maxShutdownDelaySeconds) after the switch, off the
  // deploy's critical path: the next deploy need not wait for them. close() waits for them.
  const draining = new Set<Promise<void>>();
  function drain(stop: Promise<void>) {
    const tracked = stop
      .catch((err: Error) => log.error({ err: err.message }, 'stopping old instances failed'))
      .finally(() => draining.delete(tracked));
    draining.add(tracked);
  }

  async function goLive(serviceId: string, deploy: DeployRow, signal: AbortSignal) {
    await rollOver(serviceId, deploy, signal, (service) =>
      deps.transact(async (tx) => {
        const live = await tx.deploys.transition(deploy.id, ['update_in_progress'], 'live');
        if (!live) throw new DeployFailure('canceled', 'canceled before going live');
        if (service.liveDeployId && service.liveDeployId !== deploy.id)
          await tx.deploys.transition(service.liveDeployId, ['live'], 'deactivated');
        // A healthy new deploy ends a crash loop.
        const suspenders = service.suspenders.filter((s) => s !== 'stuck_crashlooping');
        return (await tx.services.update(service.id, { liveDeployId: deploy.id, suspenders }))!;
      }),
    );
  }

  async function runDeploy(serviceId: string, deploy: DeployRow) {
    const abort = new AbortController();
    current.set(serviceId, { deployId: deploy.id, abort });
    const emit = (type: string, details?: Record<string, unknown>) =>
      events.record({ workspaceId: service.workspaceId, serviceId, deployId: deploy.id, type, details });
    let service!: ServiceRow;
    let phase: DeployStatus = 'build_failed';
    let building = false; // between build_started and build_ended: a failure owes the build its end
    try {
      const found = await repos.services.get(serviceId);
      if (!found) return;
      service = found;
      if (!deploy.artifactOf) {
        if (!(await repos.deploys.transition(deploy.id, PENDING, 'build_in_progress', { startedAt: new Date() })))
          return;
        await emit('build_started');
        building = true;
        const buildStart = new Date();
        const { startCommand, commit } = await build(service, deploy, abort.signal).finally(() =>
          deps.onBuildEnded?.(service, deploy.id, buildStart, new Date()),
        );
        await repos.deploys.update(deploy.id, { startCommand: startCommand ?? null, ...commit });
        deploy = (await repos.deploys.get(deploy.id))!;
        building = false;
        await emit('build_ended', { status: 'succeeded' });
      }
      const details = service.details;
      if (details.preDeployCommand && !deploy.artifactOf) {
        phase = 'pre_deploy_failed';
        if (!(await repos.deploys.transition(deploy.id, ['build_in_progress'], 'pre_deploy_in_progress')))
          throw new DeployFailure('canceled', 'canceled');
        const release = releaseOf(service, deploy);
        const toLog = deps.buildLog?.(service, deploy.id);
        const result = await runtime.build({
          dir: path.join(release.artifactDir, service.rootDir),
          command: details.preDeployCommand,
          env: await envFor(service, deploy),
          timeoutMs: deps.limits.buildTimeoutMs,
          signal: abort.signal,
          limits: PRE_DEPLOY_LIMITS,
          onOutput: toLog?.write,
          // Migrations reach the workspace's datastores by their internal names, as its instances do.
          network: { workspaceId: service.workspaceId },
        });
        toLog?.end();
        const failure = commandFailure(
          'pre_deploy_failed',
          'the pre-deploy command',
          result,
          { memoryMb: PRE_DEPLOY_LIMITS.memoryMb, timeoutMs: deps.limits.buildTimeoutMs },
          result.output.slice(-2000),
        );
        if (failure) throw failure;
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
      await goLive(serviceId, deploy, abort.signal);
      await emit('deploy_ended', { status: 'live' });
      deps.onDeployEnded?.('live', deploy);
      await collectGarbage(serviceId);
    } catch (err) {
      const failure = abort.signal.aborted
        ? new DeployFailure('canceled', 'canceled')
        : err instanceof DeployFailure
          ? err
          : new DeployFailure(phase, (err as Error).message);
      log.warn({ serviceId, deployId: deploy.id, status: failure.status, reason: failure.message }, 'deploy failed');
      await repos.deploys.transition(deploy.id, [...PENDING, ...IN_PROGRESS], failure.status, {
        failureReason: failure.message,
      });
      if (service && building) await emit('build_ended', buildEndedDetails(failure));
      if (service) await emit('deploy_ended', deployEndedDetails(failure));
      deps.onDeployEnded?.(failure.status, deploy);
    } finally {
      current.delete(serviceId);
    }
  }

  /** Runs the newest pending deploy of a service, canceling older pending ones, until none is left. */
  function kick(serviceId: string) {
    const loop = loops.get(serviceId);
    if (loop) return void (loop.dirty = true);
    const state = { dirty: true };
    loops.set(serviceId, state);
    void (async () => {
      while (state.dirty && !removing.has(serviceId)) {
        state.dirty = false;
        const pending = await repos.deploys.inStatus(PENDING, serviceId);
        const newest = pending.pop();
        for (const older of pending)
          await repos.deploys.transition(older.id, PENDING, 'canceled', {
            failureReason: `superseded by ${newest!.id}`,
          });
        if (newest) {
          await runDeploy(serviceId, newest);
          state.dirty = true;
        }
      }
    })()
      .catch((err) => {
        log.error({ err, serviceId }, 'deploy loop failed; retrying in a second');
        setTimeout(() => removing.has(serviceId) || kick(serviceId), 1000).unref();
      })
      .finally(() => loops.delete(serviceId));
  }

  const collectGarbage = createGarbageCollector({ repos, layout, keep: deps.limits.keepArtifacts });

  // The background loops' view of the services: a store outage must not become an unhandled
  // rejection (it would end the process), so it is logged and the loops retry on their next tick.
  const runnable = () =>
    repos.services.listRunnable().catch((err: Error) => {
      log.error({ err: err.message }, 'cannot read services; retrying on the next tick');
      return [];
    });
  const cron = createCronRunner({
    repos,
    instances,
    events,
    log,
    releaseOf,
    runnable,
    removing,
    intervalMs: Math.min(1000, deps.limits.crashCheckMs),
    collectOutput: deps.collectOutput,
  });
  const supervisor = createSupervisor({
    repos,
    instances,
    events,
    log,
    releaseOf,
    runnable,
    refreshRoute,
    stopping,
    removing,
    withServiceLock,
    intervalMs: deps.limits.crashCheckMs,
    backoffMs: deps.limits.crashBackoffMs,
  });

  const engine = {
    async trigger(
      service: ServiceRow,
      opts: {
        trigger: DeployTrigger;
        sourceId?: string;
        commitId?: string;
        clearCache?: boolean;
        artifactOf?: DeployRow;
      },
    ) {
      assertPresent(service.id);
      if (service.suspenders.includes('user')) throw conflict('the service is suspended: resume it first');
      const source = opts.sourceId
        ? { id: opts.sourceId }
        : service.repo
          ? undefined
          : await repos.deploys.latestSource(service.id);
      if (!opts.artifactOf && !source && !service.repo)
        throw conflict('nothing to deploy: upload a source archive (POST …/source/upload) or set a repo');
      const from = opts.artifactOf;
      const deploy = await repos.deploys.insert({
        id: newId('deploy'),
        serviceId: service.id,
        status: 'created',
        trigger: opts.trigger,
        sourceId: from ? from.sourceId : (source?.id ?? null),
        commitId: from ? from.commitId : (opts.commitId ?? null),
        commitMessage: from?.commitMessage ?? null,
        clearCache: opts.clearCache ?? false,
        artifactOf: from ? artifactOwner(from) : null,
        startCommand: from?.startCommand ?? null,
      });
      await events.record({
        workspaceId: service.workspaceId,
        serviceId: service.id,
        deployId: deploy.id,
        type: 'deploy_started',
        details: { trigger: opts.trigger },
      });
      kick(service.id);
      return deploy;
    },
    async rollback(service: ServiceRow, deployId: string) {
      const target = await repos.deploys.get(deployId);
      if (!target || target.serviceId !== service.id) throw notFound('deploy');
      if (target.status !== 'live' && target.status !== 'deactivated')
        throw conflict(`that deploy is ${target.status}: only a deploy that went live can be rolled back to`);
      const owner = target.artifactOf ? await repos.deploys.get(target.artifactOf) : target;
      if (!owner || owner.artifactDeleted) throw conflict("that deploy's artifact has been garbage-collected");
      return engine.trigger(service, { trigger: 'rollback', artifactOf: target });
    },
    async cancel(deploy: DeployRow) {
      const canceled = await repos.deploys.transition(deploy.id, PENDING, 'canceled', {
        failureReason: 'canceled by request',
      });
      if (canceled) return canceled;
      // Each read may find the row gone: the service was deleted meanwhile.
      const reread = async () => (await repos.deploys.get(deploy.id)) ?? Promise.reject(notFound('deploy'));
      const running = current.get(deploy.serviceId);
      if (running?.deployId === deploy.id && IN_PROGRESS.includes((await reread()).status)) {
        running.abort.abort();
        for (let waited = 0; current.get(deploy.serviceId)?.deployId === deploy.id && waited < 30_000; waited += 50)
          await sleep(50);
        return reread();
      }
      throw conflict(`the deploy is ${(await reread()).status}: only queued or in-progress deploys can be canceled`);
    },
    /** Replaces the live deploy's instances, rolling, with no downtime. */
    async restart(service: ServiceRow) {
      if (!service.liveDeployId) throw conflict('the service has no live deploy to restart');
      if (service.suspenders.includes('user')) throw conflict('the service is suspended: resume it first');
      await rollOverLive(service.id);
      await events.record({
        workspaceId: service.workspaceId,
        serviceId: service.id,
        deployId: service.liveDeployId,
        type: 'server_restarted',
        details: { triggeredByUser: null },
      });
    },
    async stopAll(service: ServiceRow) {
      current.get(service.id)?.abort.abort();
      await withServiceLock(service.id, async () => {
        await refreshRoute(service);
        await stopInstances(await instances.active({ serviceId: service.id }), graceOf(service));
      });
    },
    async resume(service: ServiceRow) {
      if (service.liveDeployId) await rollOverLive(service.id);
      else await refreshRoute(service);
    },
    /** Runs `work`, which writes under the service's dir outside its lock (an upload): refused once a deletion has begun, which waits for it. */
    async writingTo<T>(serviceId: string, work: () => Promise<T>): Promise<T> {
      assertPresent(serviceId);
      const write = { serviceId, done: work() };
      writes.add(write);
      try {
        return (await write.done) as T;
      } finally {
        writes.delete(write);
      }
    },
    isRemoving: (serviceId: string) => removing.has(serviceId),
    /**
     * Cancels queued deploys, stops the running one and every instance, then removes the files.
     * The id stays in `removing` for good (ids are never reused): nothing may touch the service
     * again, not even a supervisor pass racing the deletion of its row.
     */
    async remove(service: ServiceRow) {
      removing.add(service.id);
      try {
        for (const d of await repos.deploys.inStatus(PENDING, service.id))
          await repos.deploys.transition(d.id, PENDING, 'canceled', { failureReason: 'the service was deleted' });
        current.get(service.id)?.abort.abort();
        while (loops.has(service.id)) await sleep(50);
        await withServiceLock(service.id, async () => {
          routes.remove(service.slug);
          await stopInstances(await instances.active({ serviceId: service.id }), Math.min(graceOf(service), 5000));
        });
        await Promise.all(draining);
        await Promise.allSettled([...writes].filter((w) => w.serviceId === service.id).map((w) => w.done));
        rmSync(layout.serviceDir(service.id), { recursive: true, force: true });
        await deps.onRemoved?.();
      } catch (err) {
        removing.delete(service.id); // the delete failed: the service lives on
        throw err;
      }
    },
    /** After a (re)start of Slipway: fail interrupted deploys, re-adopt live instances, resume queues. */
    async recover() {
      await failInterruptedDeploys({ repos, events, onDeployEnded: deps.onDeployEnded });
      // Processes that should not be running: an old deploy's (its drain was cut short), the
      // interrupted deploy's, half-started ones, cron runs cut off. The supervisor refills.
      const strays: InstanceRow[] = [];
      for (const row of await instances.active()) {
        const service = await repos.services.get(row.serviceId);
        const wanted =
          service &&
          row.status === 'running' &&
          row.deployId === service.liveDeployId &&
          service.type !== 'cron_job' &&
          !service.suspenders.includes('user');
        if (!wanted) strays.push(row);
      }
      await stopInstances(strays, 1000);
      // Namespaces of instances that are gone (lost while Slipway was down, or never started) go too.
      const kept = new Set((await instances.active()).map((r) => r.id));
      await runtime.sweep((id) => kept.has(id));
      for (const service of await repos.services.listRunnable()) await refreshRoute(service);
      await supervisor.check();
      for (const d of await repos.deploys.inStatus(PENDING)) kick(d.serviceId);
      supervisor.start();
      cron.start();
    },
    refreshRoute,
    async close() {
      supervisor.stop();
      await cron.stop();
      for (const run of current.values()) run.abort.abort();
      while (current.size) await new Promise((r) => setTimeout(r, 50));
      await Promise.all(draining);
    },
  } satisfies DeployPort & Record<string, unknown>;
  return engine;
}
export type DeployEngine = ReturnType<typeof createDeployEngine>;
