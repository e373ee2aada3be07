/**
 * Runs `tick` every `intervalMs`, never two at once (a tick still under way makes the next one skip); `stop` waits for
 * the one under way. A tick that fails goes to `onError` and the next one runs as usual: a store that is down for a
 * moment must not end the process (an unhandled rejection would). The background loops' shared shape (cron runs,
 * autoscaling, metrics streams).
 */
export function tickLoop(tick: () => Promise<void>, intervalMs: number, onError: (err: unknown) => void) {
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;
  return {
    start() {
      timer = setInterval(
        () =>
          void (ticking ??= tick()
            .catch(onError)
            .finally(() => (ticking = undefined))),
        intervalMs,
      );
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await ticking;
    },
  };
}
