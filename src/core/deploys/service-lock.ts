/**
 * One critical section at a time per service: the engine's switches (deploy, restart, resume,
 * suspend, delete) and the supervisor's repairs never interleave on the same service.
 */
export function createServiceLocks() {
  const tails = new Map<string, Promise<void>>();
  return async function withServiceLock<T>(serviceId: string, work: () => Promise<T>): Promise<T> {
    const previous = tails.get(serviceId) ?? Promise.resolve();
    let release!: () => void;
    const mine = previous.then(() => new Promise<void>((resolve) => (release = resolve)));
    tails.set(serviceId, mine);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (tails.get(serviceId) === mine) tails.delete(serviceId);
    }
  };
}
export type WithServiceLock = ReturnType<typeof createServiceLocks>;
