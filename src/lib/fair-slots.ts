import { AppError } from './errors.js';

/** A slot taken: call once the work is done (more calls do nothing). */
export type Release = () => void;

interface Waiter {
  key: string;
  weight: number;
  grant(release: Release): void;
  fail(err: Error): void;
}

/**
 * Work slots shared fairly between keys (workspaces): at most `slots` at once, at most `perKey` of one key, and at
 * most `capacity` of weight (memory) at once, except that one piece of work always may run alone. Waiting work is
 * served key by key in turn (round robin), first come first served within a key: one key's backlog never makes
 * another key wait behind all of it, only behind the slots already taken.
 */
export function createFairSlots(opts: { slots: number; perKey: number; capacity?: number }) {
  const capacity = opts.capacity ?? Infinity;
  const running = new Map<string, number>();
  /** Keys with waiting work, in turn order: a key served goes to the back. */
  const queues = new Map<string, Waiter[]>();
  let inUse = 0;
  let weightInUse = 0;

  const fits = (w: Waiter) =>
    inUse < opts.slots &&
    (running.get(w.key) ?? 0) < opts.perKey &&
    (inUse === 0 || weightInUse + w.weight <= capacity);

  function take(w: Waiter): Release {
    inUse++;
    weightInUse += w.weight;
    running.set(w.key, (running.get(w.key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      inUse--;
      weightInUse -= w.weight;
      const left = running.get(w.key)! - 1;
      if (left > 0) running.set(w.key, left);
      else running.delete(w.key);
      pump();
    };
  }

  function pump() {
    for (let served = true; served;) {
      served = false;
      for (const [key, queue] of queues) {
        const first = queue[0]!;
        if (!fits(first)) continue;
        queue.shift();
        queues.delete(key);
        if (queue.length > 0) queues.set(key, queue); // to the back of the turn
        first.grant(take(first));
        served = true;
        break;
      }
    }
  }

  return {
    /**
     * A slot for `key`, now or once its turn comes; `onWait` runs when it has to wait. Rejects (canceled) when
     * `signal` aborts before the slot is given.
     */
    acquire(key: string, opts2: { weight?: number; signal?: AbortSignal; onWait?(): void } = {}): Promise<Release> {
      const weight = opts2.weight ?? 0;
      return new Promise<Release>((resolve, reject) => {
        const waiter: Waiter = { key, weight, grant: resolve, fail: reject };
        if (!queues.has(key) && fits(waiter)) return resolve(take(waiter));
        const signal = opts2.signal;
        if (signal?.aborted) return reject(new AppError('conflict', 'canceled while waiting'));
        const queue = queues.get(key) ?? [];
        queue.push(waiter);
        queues.set(key, queue);
        const onAbort = () => {
          const q = queues.get(key);
          const at = q?.indexOf(waiter) ?? -1;
          if (at < 0) return; // already granted
          q!.splice(at, 1);
          if (q!.length === 0) queues.delete(key);
          waiter.fail(new AppError('conflict', 'canceled while waiting'));
          pump();
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        waiter.grant = (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        };
        opts2.onWait?.();
      });
    },
    /** Work waiting, in all or for one key. */
    waiting(key?: string): number {
      if (key !== undefined) return queues.get(key)?.length ?? 0;
      let n = 0;
      for (const q of queues.values()) n += q.length;
      return n;
    },
    running: (key?: string) => (key === undefined ? inUse : (running.get(key) ?? 0)),
  };
}
export type FairSlots = ReturnType<typeof createFairSlots>;

/**
 * Queries run in their key's turn (createFairSlots): `busy()` (a 429) when `maxWaiting` of the key already wait, or
 * once one has waited `waitMs`. What the log reader and the metrics family give each workspace.
 */
export function createTurns(opts: {
  slots: number;
  perKey: number;
  maxWaiting: number;
  waitMs: number;
  busy(): Error;
}) {
  const slots = createFairSlots(opts);
  return async function inTurn<T>(key: string, work: () => Promise<T>): Promise<T> {
    if (slots.waiting(key) >= opts.maxWaiting) throw opts.busy();
    const release = await slots.acquire(key, { signal: AbortSignal.timeout(opts.waitMs) }).catch(() => {
      throw opts.busy();
    });
    try {
      return await work();
    } finally {
      release();
    }
  };
}
