import type { SwarmCluster, SwarmNode } from '../runtime/swarm/cluster.js';

/** The swarm's nodes as `GET /status` shows them, or why the manager did not answer. */
export type ClusterStatus = { nodes: SwarmNode[] } | { error: string };

/**
 * The swarm's nodes for `GET /status`, asked of the manager at most once every `ttlMs` and given up on after
 * `timeoutMs`: the route is public, so a flood of it costs the manager one call per `ttlMs`, and a manager that hangs
 * never holds a status request longer than that.
 */
export function clusterStatus(cluster: Pick<SwarmCluster, 'nodes'>, ttlMs = 5_000, timeoutMs = 3_000) {
  let cached: { at: number; value: Promise<ClusterStatus> } | undefined;
  return (): Promise<ClusterStatus> => {
    if (cached && Date.now() - cached.at < ttlMs) return cached.value;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the swarm manager did not answer within ${timeoutMs} ms`)), timeoutMs);
    });
    const value = Promise.race([cluster.nodes(), late]).then(
      (nodes) => ({ nodes }),
      (err: unknown) => ({ error: (err as Error).message }),
    );
    void value.finally(() => clearTimeout(timer));
    cached = { at: Date.now(), value };
    return value;
  };
}
