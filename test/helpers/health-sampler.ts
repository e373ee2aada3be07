/**
 * GET /api/health one after another (a short pause between) until stopped: how long each took, counted from when it
 * was due, so a loop held during the pause counts too (a test's server shares the test's event loop).
 */
export function sampleHealth(url: string, pauseMs = 20) {
  const samples: number[] = [];
  const failures: number[] = [];
  let running = true;
  const loop = (async () => {
    let due = performance.now();
    while (running) {
      const res = await fetch(`${url}/api/health`);
      await res.arrayBuffer();
      if (res.status !== 200) failures.push(res.status);
      samples.push(performance.now() - due);
      due = performance.now() + pauseMs;
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  })();
  return {
    /** Stops sampling: the count, p99 and max in ms, and the statuses that were not 200. */
    async stop() {
      running = false;
      await loop;
      const sorted = [...samples].sort((a, b) => a - b);
      const p99 = sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)] ?? 0;
      return { count: samples.length, p99: Math.round(p99), max: Math.round(sorted.at(-1) ?? 0), failures };
    },
  };
}
