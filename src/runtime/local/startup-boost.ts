import { availableParallelism } from 'node:os';
import type { Cgroups } from './cgroups.js';
import type { Limits } from '../../model/limits.js';

/**
 * Start-up CPU boost (docs/deploys.md, "Start-up CPU boost"): a starting instance may use up to this much CPU, at
 * least its plan's, until it is up. On a starter plan's half CPU, Node took twice as long to start (270–290 ms against
 * 110–140 ms here), and every deploy and restart waits for that. A whole CPU gives all of it (no limit at all started
 * Node no faster), and takes no more from the API and the other apps than that. It is bounded in time (BOOST_MAX_MS),
 * and fairness between the apps still holds: when the CPU is contended, the kernel shares it by weight.
 */
const BOOST_MILLICORES = 1000;
/** The longest an instance runs boosted, when nothing says it is up before (a health check that goes on failing). */
export const BOOST_MAX_MS = 10_000;

export function createStartupBoosts(cgroups: Cgroups | undefined) {
  const ends = new Map<string, () => void>();
  return {
    /** The limits to start `limits`' instance with. */
    boosted(limits: Limits): Limits {
      const most = Math.min(BOOST_MILLICORES, availableParallelism() * 1000);
      return { ...limits, cpuMillicores: Math.max(limits.cpuMillicores, most) };
    },
    /** The instance's group (dirs) started boosted: it gets `millicores` when settled, or after BOOST_MAX_MS. */
    begin(instanceId: string, dirs: string[], millicores: number): void {
      if (!cgroups || dirs.length === 0) return;
      const end = () => {
        clearTimeout(timer);
        ends.delete(instanceId);
        cgroups.setCpu(dirs, millicores);
      };
      const timer = setTimeout(end, BOOST_MAX_MS).unref();
      ends.set(instanceId, end);
    },
    /** Ends the instance's boost now (it is up, or gone). */
    settle(instanceId: string): void {
      ends.get(instanceId)?.();
    },
  };
}
export type StartupBoosts = ReturnType<typeof createStartupBoosts>;
