import type { SwarmSettings } from '../../model/settings.js';
import { swarmCluster, type SwarmCluster } from './cluster.js';
import { engineApi } from './engine-api.js';

export type { SwarmCluster, SwarmNode, SwarmTask } from './cluster.js';

/** The swarm SLIPWAY_SWARM_DOCKER_HOST names (docs/swarm.md). */
export function createSwarmCluster(settings: SwarmSettings): SwarmCluster {
  return swarmCluster(engineApi(settings.dockerHost, { tls: settings.tls }), { encrypted: settings.encrypted });
}
