import type { RuntimeCapabilities } from '../runtime/types.js';
import type { Datastores } from './datastores/datastores.js';

/**
 * What this machine offers: how apps are isolated and how datastores are provisioned. `GET /status` answers with it
 * and the start-up summary (app/startup-summary.ts) says it, so the two never disagree.
 */
export function machineStatus(runtime: RuntimeCapabilities, datastores: Pick<Datastores, 'availability'>) {
  const { network, sandbox, cgroups, limits, notes, containers } = runtime;
  return {
    isolation: { network, sandbox, cgroups, limits, notes },
    // docker and image services: the engine, or why they are refused here.
    containers,
    datastores: datastores.availability(),
  };
}
export type MachineStatus = ReturnType<typeof machineStatus>;
