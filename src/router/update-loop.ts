/**
 * How a data plane outside the API process (nginx, the Node router's own process) takes route table changes: each
 * `changed()` asks for one more `apply()`, changes that come while one runs are coalesced into the next, and
 * `applied()` resolves once every change made before the call has been applied. Nothing is applied before `start()`
 * (the engine has not re-adopted the live instances yet), so an adopted data plane keeps serving what it had.
 */
export function createUpdateLoop(apply: () => Promise<void>, onError: (err: Error) => void) {
  let requested = 0;
  let done = 0;
  let running = false;
  let started = false;
  const waiters: Array<{ generation: number; resolve(): void }> = [];

  async function loop(): Promise<void> {
    if (running) return;
    running = true;
    try {
      while (started && done < requested) {
        const n = requested;
        await apply().catch(onError);
        done = n;
        for (const w of waiters.splice(0))
          if (w.generation <= done) w.resolve();
          else waiters.push(w);
      }
    } finally {
      running = false;
    }
  }

  return {
    get started() {
      return started;
    },
    /** An update is being applied now. */
    get busy() {
      return running;
    },
    changed(): void {
      requested++;
      if (started) void loop();
    },
    applied(): Promise<void> {
      if (!started || done >= requested) return Promise.resolve();
      const generation = requested;
      return new Promise<void>((resolve) => waiters.push({ generation, resolve }));
    },
    async start(): Promise<void> {
      started = true;
      requested++;
      await loop();
    },
    /** Stops applying; whoever waits is let go. */
    stop(): void {
      started = false;
      for (const w of waiters.splice(0)) w.resolve();
    },
  };
}
