import { groupDirsOf, oomKilled, type Cgroups } from './cgroups.js';

/** Records kept at most: one nobody asks for (an instance that was not live) must not pile up. */
const MAX_KEPT = 1000;

/**
 * Which exited instances the OOM killer killed. An instance's group is removed as it exits, so it
 * is read at that moment and remembered until asked (once per crash); a group still there (its
 * exit not yet seen by this process) is read directly. An instance that died while no Slipway ran
 * is known only while its group is left (the boot sweep removes groups older than a minute).
 */
export function createOomRecord(cgroups: Cgroups | undefined) {
  const killed = new Set<string>();
  const read = (instanceId: string) => cgroups !== undefined && oomKilled(groupDirsOf(cgroups, instanceId));
  return {
    /** At the instance's exit, before its group is removed. */
    noteExit(instanceId: string) {
      if (!read(instanceId)) return;
      killed.add(instanceId);
      if (killed.size > MAX_KEPT) killed.delete(killed.values().next().value as string);
    },
    take: (instanceId: string) => killed.delete(instanceId) || read(instanceId),
  };
}
