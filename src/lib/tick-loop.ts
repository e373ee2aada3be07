/**
 * Runs `tick` every `intervalMs`, never two at once (a tick still under way makes the next one skip); `stop` waits for
 * the one under way. The background loops' shared shape (cron runs, autoscaling).
 */
export function tickLoop(tick: () => Promise<void>, intervalMs: number) {
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;
  return {
    start() {
      timer = setInterval(() => void (ticking ??= tick().finally(() => (ticking = undefined))), intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await ticking;
    },
  };
}
