import { conflict, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { createFairSlots } from '../../lib/fair-slots.js';
import { createKeyedLocks } from '../../lib/keyed-locks.js';
import { IN_PROGRESS, PENDING, type DeployRow } from '../../store/repos/deploys.js';
import type { DeployTrigger } from '../../model/enums.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { createCronRunner } from './cron.js';
import { createJobRunner } from './job-runner.js';
import { mergeEnv, platformEnv } from '../service-state/env.js';
import { createGarbageCollector } from './gc.js';
import { withDeployToolchain } from '../builds/toolchains.js';
import { imageTag } from '../builds/images.js';
import { createInstances, type Release } from '../instances/instances.js';
import { artifactOwner } from '../service-state/layout.js';
import { createRouteRefresher } from '../instances/live-route.js';
import type { DeployPort } from './port.js';
import { createBuilder } from '../builds/pipeline.js';
import { currentStartCommand } from './redeploy.js';
import { recoverInstances } from './recovery.js';
import { createDeployRunner } from './run-deploy.js';
import { createRollover } from '../instances/rollover.js';
import { createServiceControl } from '../instances/service-control.js';
import { createTrash } from '../service-state/trash.js';
import { createSupervisor } from '../instances/supervisor.js';
import type { EngineDeps } from './engine-deps.js';
import { renderTrigger } from '../render-events.js';

export type { EngineDeps };

/**
 * Runs deploys one at a time per service (newest pending wins) and moves the live pointer; restarts, suspends and
 * removes services, and re-adopts everything after a restart. What is happening to each service is in `lifecycle`.
 */
export function createDeployEngine(deps: EngineDeps) {
  const { repos, runtime, layout, routeTable, lifecycle, events, log } = deps;
  const instances = createInstances({
    repo: repos.instances,
    runtime,
    layout,
    healthTimeoutMs: deps.limits.healthTimeoutMs,
    onSpawned: deps.onInstanceSpawned,
    onExited: (instanceId) => routeTable.dropInstance(instanceId),
    onPortDetected: async (service, deployId, detected) => {
      await events.record({
        workspaceId: service.workspaceId,
        serviceId: service.id,
        deployId,
        type: 'port_detected',
        details: detected,
      });
      log.info({ serviceId: service.id, ...detected }, 'deploys: routed to the port the instance opened');
    },
  });
  /** A build's environment, or (with what its build ran on: its toolchain) an instance's, a pre-deploy's or a cron run's. */
  const envFor = async (service: ServiceRow, deploy: DeployRow | undefined, instance?: { id: string; port?: number }) =>
    withDeployToolchain(
      mergeEnv(platformEnv(service, deploy, deps.urls, instance), await deps.layersOf(service.id)),
      deploy?.toolchain,
      deploy ? layout.artifactDir(service.id, artifactOwner(deploy)) : '',
      runtime.tools,
    );
  const build = createBuilder({
    repo: repos.deploys,
    runtime,
    layout,
    limits: deps.limits,
    buildEnv: (s, d) => envFor(s, d),
    secretFilesOf: deps.secretFilesOf,
    buildLog: deps.buildLog,
    cache: deps.buildCache,
    git: deps.git,
    gitToken: deps.gitToken,
    credential: deps.registryCredential,
    lifecycle,
    log,
  });
  const withServiceLock = createKeyedLocks();
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const releaseOf = (service: ServiceRow, deploy: DeployRow): Release => ({
    service,
    deploy,
    artifactDir: layout.artifactDir(service.id, artifactOwner(deploy)),
    startCommand: deploy.startCommand ?? '',
    ...(deploy.toolchain?.image
      ? {
          container: {
            storageDir: layout.containerStorage(service.id),
            image: deploy.toolchain.image.tag,
            ...(deploy.startCommand ? { command: deploy.startCommand } : {}),
          },
        }
      : {}),
    env: (instance) => envFor(service, deploy, instance),
    secretFiles: () => deps.secretFilesOf(service.id),
    // Its persistent disk (core/disks.ts), read at each start: one added or moved applies from the next.
    async disk() {
      const disk = runtime.disks && (await repos.disks.ofService(service.id));
      return disk ? { ...layout.diskPlace(service.id, disk.sizeGb), mountPath: disk.mountPath } : undefined;
    },
  });
  const refreshRoute = createRouteRefresher({ repos, routeTable, runtime, layout, instances, lifecycle });
  const { rollOver, stopInstances } = createRollover({
    repos,
    instances,
    lifecycle,
    refreshRoute,
    withServiceLock,
    releaseOf,
    log,
  });
  const trash = createTrash(layout.trashDir, log);
  const control = createServiceControl({
    ...deps,
    trash,
    instances,
    withServiceLock,
    refreshRoute,
    rollOver,
    stopInstances,
    releaseDisks: async (serviceId) => {
      await runtime.unmountBuildDisk?.(layout.buildDir(serviceId));
      await runtime.disks?.unmount(layout.diskPlace(serviceId, 0)); // its persistent disk goes with its files
      await runtime.containers?.releaseStorage(layout.containerStorage(serviceId));
    },
  });

  const runDeploy = createDeployRunner({
    ...deps,
    buildSlots: createFairSlots({
      slots: deps.limits.buildQueue.concurrency,
      perKey: deps.limits.buildQueue.perWorkspace,
      capacity: deps.limits.buildQueue.memoryMb,
    }),
    build,
    envFor,
    releaseOf,
    rollOver,
    collectGarbage: createGarbageCollector({
      repos,
      layout,
      trash,
      keep: deps.limits.keepArtifacts,
      budgetBytes: deps.limits.serviceDiskMb * 1024 * 1024,
      log,
      removeImage: async (serviceId, deployId) =>
        runtime.containers?.removeImages(layout.containerStorage(serviceId), [imageTag(serviceId, deployId)]),
    }),
  });

  /** Runs the newest pending deploy of a service, canceling older pending ones, until none is left. */
  function kick(serviceId: string) {
    if (!lifecycle.requestLoopPass(serviceId)) return; // the running loop makes another pass
    void (async () => {
      while (!lifecycle.isRemoving(serviceId) && lifecycle.takeLoopPass(serviceId)) {
        const pending = await repos.deploys.inStatus(PENDING, serviceId);
        const newest = pending.pop();
        for (const older of pending)
          await repos.deploys.transition(older.id, PENDING, 'canceled', {
            failureReason: `superseded by ${newest!.id}`,
          });
        if (newest) {
          await runDeploy(serviceId, newest);
          lifecycle.requestLoopPass(serviceId);
        }
      }
    })()
      .catch((err) => {
        log.error({ err, serviceId }, 'deploy loop failed; retrying in a second');
        setTimeout(() => lifecycle.isRemoving(serviceId) || kick(serviceId), 1000).unref();
      })
      .finally(() => lifecycle.loopEnded(serviceId));
  }

  // The background loops' view of the services: a store outage must not become an unhandled
  // rejection (it would end the process), so it is logged and the loops retry on their next tick.
  const runnable = () =>
    repos.services.listRunnable().catch((err: Error) => {
      log.error({ err: err.message }, 'cannot read services; retrying on the next tick');
      return [];
    });
  const loops = {
    repos,
    instances,
    events,
    log,
    releaseOf,
    runnable,
    lifecycle,
    intervalMs: Math.min(1000, deps.limits.crashCheckMs),
    collectOutput: deps.collectOutput,
  };
  const cron = createCronRunner(loops);
  const jobs = createJobRunner({ ...loops, instanceDir: layout.instanceDir });
  const supervisor = createSupervisor({
    ...loops,
    refreshRoute,
    withServiceLock,
    intervalMs: deps.limits.crashCheckMs,
    backoffMs: deps.limits.crashBackoffMs,
    transact: deps.transact,
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
      control.assertPresent(service.id);
      if (service.suspenders.includes('user')) throw conflict('the service is suspended: resume it first');
      const source = opts.sourceId
        ? { id: opts.sourceId }
        : service.repo
          ? undefined
          : await repos.deploys.latestSource(service.id);
      // An image service's source is its image (pullImage), a docker or native one's an archive or its repo.
      if (!opts.artifactOf && !source && !service.repo && service.details.runtime !== 'image')
        throw conflict('nothing to deploy: upload a source archive (POST …/source/upload) or set a repo');
      const from = opts.artifactOf;
      // A rollback restores what was live, its command included; a deploy without building runs the build with the
      // service's start command as it is now.
      const startCommand = !from
        ? null
        : opts.trigger === 'rollback'
          ? from.startCommand
          : currentStartCommand(layout, service, from);
      // The deploy and its deploy_started event commit together (the outbox).
      const deploy = await deps.transact(async (tx) => {
        const row = await tx.deploys.insert({
          id: newId('deploy'),
          serviceId: service.id,
          status: 'created',
          trigger: opts.trigger,
          sourceId: from ? from.sourceId : (source?.id ?? null),
          commitId: from ? from.commitId : (opts.commitId ?? null),
          commitMessage: from?.commitMessage ?? null,
          clearCache: opts.clearCache ?? false,
          artifactOf: from ? artifactOwner(from) : null,
          startCommand,
          // The artifact runs on what it was built with.
          toolchain: from?.toolchain ?? null,
        });
        await events.record(
          {
            workspaceId: service.workspaceId,
            serviceId: service.id,
            deployId: row.id,
            type: 'deploy_started',
            details: { trigger: renderTrigger(row, !service.liveDeployId) },
          },
          tx.events,
        );
        return row;
      });
      events.poke();
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
      // A queued deploy waits for a build slot in its loop: it stops waiting.
      if (canceled && lifecycle.runningDeploy(deploy.serviceId) === deploy.id)
        lifecycle.abortDeploy(deploy.serviceId, deploy.id);
      if (canceled) return canceled;
      // Each read may find the row gone: the service was deleted meanwhile.
      const reread = async () => (await repos.deploys.get(deploy.id)) ?? Promise.reject(notFound('deploy'));
      const running = () => lifecycle.runningDeploy(deploy.serviceId) === deploy.id;
      if (running() && IN_PROGRESS.includes((await reread()).status)) {
        lifecycle.abortDeploy(deploy.serviceId, deploy.id);
        for (let waited = 0; running() && waited < 30_000; waited += 50) await sleep(50);
        return reread();
      }
      throw conflict(`the deploy is ${(await reread()).status}: only queued or in-progress deploys can be canceled`);
    },
    ...control,
    /** One-off jobs' processes (core/one-off-jobs.ts has the API's rules). */
    jobs: { launch: jobs.launch, cancel: jobs.cancel },
    /** Cron runs by request: Render's POST and DELETE /v1/cron-jobs/:id/runs. */
    cronRuns: { trigger: cron.trigger, cancel: cron.cancel },
    /** After a (re)start of Slipway: fail interrupted deploys, re-adopt live instances and jobs, resume queues. */
    async recover() {
      void trash.empty(); // what a crash left in it
      await recoverInstances({ ...deps, instances, stopInstances, refreshRoute });
      await jobs.recover();
      jobs.start();
      await supervisor.check();
      for (const d of await repos.deploys.inStatus(PENDING)) kick(d.serviceId);
      supervisor.start();
      cron.start();
    },
    refreshRoute,
    async close() {
      supervisor.stop();
      await cron.stop();
      await jobs.stop();
      lifecycle.abortAllDeploys();
      while (lifecycle.anyDeployRunning()) await sleep(50);
      await lifecycle.drained();
      await runtime.unmountBuildDisk?.(); // the disks kept mounted for a next build
    },
  } satisfies DeployPort & Record<string, unknown>;
  return engine;
}
export type DeployEngine = ReturnType<typeof createDeployEngine>;
