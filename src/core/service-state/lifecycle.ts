/**
 * What is happening to each service right now, in this process: its deletion, the instances being stopped, the deploy
 * running and its deploy loop, the writes and drains a deletion or a shutdown waits for. The deploy engine, the
 * supervisor, the cron runner and service management share this object and call its operations; its collections stay
 * in here (docs/architecture.md, "Deploys").
 */
export function createLifecycle() {
  /** Ids stay for good once a deletion succeeded (ids are never reused): nothing may touch the service again. */
  const removing = new Set<string>();
  /** Instances being stopped: out of the route, and counted for nothing by the supervisor. */
  const stopping = new Set<string>();
  const running = new Map<string, { deployId: string; abort: AbortController }>();
  /** A service's deploy loop, and whether it must make another pass. */
  const loops = new Map<string, { again: boolean }>();
  /** Writes under a service's dir outside its lock (uploads): its deletion waits for them. */
  const writes = new Set<{ serviceId: string; done: Promise<unknown> }>();
  /** Old instances stopping after a roll-over, off the deploy's critical path: deletion and shutdown wait for them. */
  const draining = new Set<Promise<void>>();
  /** Tidy-up after a build or a deploy, off its critical path: per kind and service, each after the one before. */
  const tidying = new Map<string, Promise<void>>();

  return {
    markRemoving: (serviceId: string) => void removing.add(serviceId),
    /** The deletion failed: the service lives on. */
    unmarkRemoving: (serviceId: string) => void removing.delete(serviceId),
    isRemoving: (serviceId: string) => removing.has(serviceId),

    beginStopping: (rows: Array<{ id: string }>) => rows.forEach((r) => stopping.add(r.id)),
    endStopping: (rows: Array<{ id: string }>) => rows.forEach((r) => stopping.delete(r.id)),
    isStopping: (instanceId: string) => stopping.has(instanceId),

    /** Records the service's running deploy; its signal aborts when the deploy is canceled or the service stops. */
    deployStarted(serviceId: string, deployId: string): AbortSignal {
      const abort = new AbortController();
      running.set(serviceId, { deployId, abort });
      return abort.signal;
    },
    deployEnded: (serviceId: string) => void running.delete(serviceId),
    runningDeploy: (serviceId: string) => running.get(serviceId)?.deployId,
    /** Aborts the service's running deploy (only when it is `deployId`, if given). */
    abortDeploy(serviceId: string, deployId?: string) {
      const run = running.get(serviceId);
      if (run && (deployId === undefined || run.deployId === deployId)) run.abort.abort();
    },
    abortAllDeploys: () => running.forEach((run) => run.abort.abort()),
    anyDeployRunning: () => running.size > 0,

    /** Asks the service's deploy loop for a pass: true when none runs, and the caller must start it. */
    requestLoopPass(serviceId: string): boolean {
      const loop = loops.get(serviceId);
      if (loop) {
        loop.again = true;
        return false;
      }
      loops.set(serviceId, { again: true });
      return true;
    },
    /** Whether the loop must make another pass; the request is consumed. */
    takeLoopPass(serviceId: string): boolean {
      const loop = loops.get(serviceId);
      if (!loop?.again) return false;
      loop.again = false;
      return true;
    },
    loopEnded: (serviceId: string) => void loops.delete(serviceId),
    hasLoop: (serviceId: string) => loops.has(serviceId),

    /** Runs `work`, which writes under the service's dir outside its lock, so that a deletion waits for it. */
    async trackWrite<T>(serviceId: string, work: () => Promise<T>): Promise<T> {
      const write = { serviceId, done: work() };
      writes.add(write);
      try {
        return await write.done;
      } finally {
        writes.delete(write);
      }
    },
    /** Settles when the service's writes under way have. */
    writesSettled: (serviceId: string) =>
      Promise.allSettled([...writes].filter((w) => w.serviceId === serviceId).map((w) => w.done)),

    /** Tracks a drain until it ends; its failure is the caller's to log (a rejection here would be unhandled). */
    drain(stop: Promise<void>) {
      const tracked: Promise<void> = stop.then(
        () => undefined,
        () => undefined,
      );
      void tracked.finally(() => draining.delete(tracked));
      draining.add(tracked);
    },
    drained: () => Promise.all([...draining, ...tidying.values()]),

    /**
     * Runs `work` on the service's files after a build ('build': its disk's tidy-up) or after a deploy went live
     * ('artifacts': garbage collection), off the deploy's critical path (docs/deploys.md, "Deploy speed"): after the
     * service's previous work of that kind; the next build, a deletion and a shutdown wait for it (tidied, drained).
     * Its failure is the caller's to log.
     */
    tidy(serviceId: string, kind: 'build' | 'artifacts', work: () => Promise<void>) {
      const key = `${kind}:${serviceId}`;
      const done = (tidying.get(key) ?? Promise.resolve()).then(work).then(
        () => undefined,
        () => undefined,
      );
      tidying.set(key, done);
      void done.finally(() => tidying.get(key) === done && tidying.delete(key));
    },
    /** Settles when the service's tidy-up of `kind` (of any kind, if none) has. */
    tidied: (serviceId: string, kind?: 'build' | 'artifacts') =>
      Promise.all(
        [...tidying]
          .filter(([key]) => (kind ? key === `${kind}:${serviceId}` : key.endsWith(`:${serviceId}`)))
          .map(([, done]) => done),
      ),
  };
}
export type Lifecycle = ReturnType<typeof createLifecycle>;
