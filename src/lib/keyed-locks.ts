/**
 * One critical section at a time per key: the deploy engine's switches and the supervisor's
 * repairs never interleave on one service, nor the datastore reconciler's steps on one datastore.
 */
export function createKeyedLocks() {
  const tails = new Map<string, Promise<void>>();
  return async function withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = previous.then(() => new Promise<void>((resolve) => (release = resolve)));
    tails.set(key, mine);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (tails.get(key) === mine) tails.delete(key);
    }
  };
}
export type WithKeyedLock = ReturnType<typeof createKeyedLocks>;

/** One critical section at a time, full stop: the keyed lock with a single key (a loop's passes and the calls that must not overlap them). */
export function createSerial() {
  const withLock = createKeyedLocks();
  return <T>(work: () => Promise<T>): Promise<T> => withLock('', work);
}
