import { watch, type FSWatcher } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * What wakes the log collector's loop. inotify on each instance dir wakes it as soon as an app
 * writes (the poll is the fallback for filesystems without it): a line waits milliseconds, not
 * up to `pollMs`. A woken pass reads only the dirs written since the last one; every `pollMs`
 * (however often it is woken) a pass reads every stream: partial lines, stopped instances,
 * missed events. Passes are at least `minGapMs` apart.
 *
 * A watch is one-shot, re-armed (`arm`) when its dir is read: an app writing 100,000 times a
 * second would otherwise cost as many callbacks (a third of a core), however little is read.
 */
export function createWakeups(pollMs: number, minGapMs: number) {
  const watchers = new Map<string, FSWatcher>();
  const written = new Set<string>();
  let everything = true;
  let lastFull = 0;
  let wake: (() => void) | undefined;
  let woken = false;
  let startedAt = 0;
  let stopped = false;

  /** `dir` was written; without one, every stream is to be read (a new instance). */
  function wrote(dir?: string) {
    if (dir) written.add(dir);
    else everything = true;
    woken = true;
    wake?.();
  }

  function disarm(dir: string) {
    watchers.get(dir)?.close();
    watchers.delete(dir);
  }

  return {
    wrote,
    disarm,
    /** Wakes the loop at `dir`'s next write (once). */
    arm(dir: string) {
      if (watchers.has(dir) || stopped) return;
      try {
        const watcher = watch(dir, () => {
          if (watchers.get(dir) === watcher) disarm(dir);
          wrote(dir);
        });
        watchers.set(
          dir,
          watcher.on('error', () => disarm(dir)),
        );
      } catch {
        // not there yet (or no inotify): the poll covers it
      }
    },
    /** Drops the watches of dirs no longer tailed. */
    keepOnly(dirs: Set<string>) {
      for (const dir of [...watchers.keys()]) if (!dirs.has(dir)) disarm(dir);
    },
    /** Starts a pass: every stream (`all`), or those of the dirs written since the last pass. */
    begin(): { all: boolean; dirs: Set<string> } {
      startedAt = Date.now();
      woken = false; // what wakes the loop from here on is read by the next pass
      const all = everything || startedAt - lastFull >= pollMs;
      if (all) {
        everything = false;
        lastFull = startedAt;
      }
      const dirs = new Set(written);
      written.clear();
      return { all, dirs };
    },
    /** Until the next pass is due: woken by a write, or `pollMs`; never sooner than `minGapMs` after the last began. */
    async pause() {
      if (!woken) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pollMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      const gap = startedAt + minGapMs - Date.now();
      if (gap > 0 && !stopped) await sleep(gap);
    },
    stop() {
      stopped = true;
      wake?.();
      for (const dir of [...watchers.keys()]) disarm(dir);
    },
  };
}
