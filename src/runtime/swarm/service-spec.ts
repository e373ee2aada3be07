import type { Limits } from '../../model/limits.js';

/** The user a task runs as unless its image needs root: nobody, as local containers (docs/swarm.md). */
export const TASK_USER = '65534:65534';

/** One Slipway service as a Swarm service (docs/swarm.md, "What runs where"). */
export interface SwarmServiceSpec {
  /** The Swarm service's name (Slipway's service id: unique, and a valid DNS label). */
  name: string;
  workspaceId: string;
  /** The names it answers to on its workspace's network (its slug), besides `name`. */
  hostnames: string[];
  /** An image reference every node can pull, by digest (`registry/name@sha256:…`) so that a rollback is exact. */
  image: string;
  /** Run with /bin/sh -c instead of the image's CMD (Render's dockerCommand). */
  command?: string;
  env: Record<string, string>;
  replicas: number;
  /** Per task: limits, and the memory and CPU reserved on its node as well. */
  limits: Limits;
  /** `uid:gid`; TASK_USER when unset. '0:0' only for an image that needs root. */
  user?: string;
  /** Placement constraints (`node.labels.slipway.datastore==pg-1`): a datastore stays with its volume. */
  constraints?: string[];
  /** Named volumes of the node it runs on (a datastore's data), mounted at `target`. */
  volumes?: Array<{ name: string; target: string }>;
  labels?: Record<string, string>;
}

/** Labels Slipway puts on what it makes in a swarm, to find it again after a restart. */
export const LABEL = { service: 'slipway.service', workspace: 'slipway.workspace' } as const;

/**
 * The Engine API's ServiceSpec for it:
 * - tasks spread over nodes, one replaced at a time, the new one started before the old one stops (start-first), and
 *   an update that fails rolled back by Swarm;
 * - `dnsrr`: the service's name resolves to its tasks' own addresses (no virtual IP: this needs no IPVS, and the
 *   router sees each task, which a zero-downtime roll-over needs);
 * - no capabilities, an init as PID 1, nobody unless told otherwise; the plan's memory, CPU and pids as limits, and
 *   the memory and CPU reserved, so that Swarm places a task only where they are free.
 */
export function serviceSpec(spec: SwarmServiceSpec, networkId: string) {
  const memoryBytes = spec.limits.memoryMb * 1024 * 1024;
  const nanoCpus = spec.limits.cpuMillicores * 1_000_000;
  return {
    Name: spec.name,
    Labels: { ...spec.labels, [LABEL.service]: spec.name, [LABEL.workspace]: spec.workspaceId },
    TaskTemplate: {
      ContainerSpec: {
        Image: spec.image,
        ...(spec.command === undefined ? {} : { Command: ['/bin/sh', '-c', spec.command] }),
        Env: Object.entries(spec.env).map(([key, value]) => `${key}=${value}`),
        User: spec.user ?? TASK_USER,
        Init: true,
        CapabilityDrop: ['ALL'],
        Mounts: (spec.volumes ?? []).map((v) => ({ Type: 'volume', Source: v.name, Target: v.target })),
        Labels: { [LABEL.service]: spec.name, [LABEL.workspace]: spec.workspaceId },
      },
      Resources: {
        Limits: { NanoCPUs: nanoCpus, MemoryBytes: memoryBytes, Pids: spec.limits.pids },
        Reservations: { NanoCPUs: nanoCpus, MemoryBytes: memoryBytes },
      },
      RestartPolicy: { Condition: 'any', Delay: 1_000_000_000, MaxAttempts: 0 },
      Placement: {
        Constraints: spec.constraints ?? [],
        Preferences: [{ Spread: { SpreadDescriptor: 'node.id' } }],
      },
      Networks: [{ Target: networkId, Aliases: spec.hostnames }],
    },
    Mode: { Replicated: { Replicas: spec.replicas } },
    UpdateConfig: { Parallelism: 1, Order: 'start-first', FailureAction: 'rollback', Monitor: 5_000_000_000 },
    RollbackConfig: { Parallelism: 1, Order: 'start-first' },
    EndpointSpec: { Mode: 'dnsrr' },
  };
}
