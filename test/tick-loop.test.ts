import { describe, expect, it } from 'vitest';
import { tickLoop } from '../src/lib/tick-loop.js';

describe('tickLoop (cron, autoscaling and metrics streams)', () => {
  it('hands a failed tick to onError, goes on ticking, and stops cleanly: no unhandled rejection ends the process', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let ticks = 0;
      const errors: unknown[] = [];
      const loop = tickLoop(
        async () => {
          ticks++;
          throw new Error(`store down (${ticks})`);
        },
        10,
        (err) => errors.push(err),
      );
      loop.start();
      await new Promise((r) => setTimeout(r, 100));
      await loop.stop();
      await new Promise((r) => setTimeout(r, 20)); // an unhandled rejection is reported after a turn
      expect(ticks).toBeGreaterThanOrEqual(2);
      expect(errors).toHaveLength(ticks);
      expect(String(errors[0])).toMatch(/store down/);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
