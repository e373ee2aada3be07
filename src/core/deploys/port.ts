import type { DeployTrigger } from '../../model/enums.js';
import type { ServiceRow } from '../../store/repos/services.js';

/** What service management (core/services/services.ts) needs from the deploy engine, which implements it (engine.ts). */
export interface DeployPort {
  trigger(service: ServiceRow, opts: { trigger: DeployTrigger; sourceId?: string }): Promise<{ id: string }>;
  /** Stops the service's instances (suspend): the live deploy stays live, ready to resume. */
  stopAll(service: ServiceRow): Promise<void>;
  resume(service: ServiceRow): Promise<void>;
  /** Stops everything and removes the service's files. */
  remove(service: ServiceRow): Promise<void>;
  /** Points the router at the service as it is now (its static site's rules changed). */
  refreshRoute(service: ServiceRow): Promise<void>;
}
