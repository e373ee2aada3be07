import { EngineError, type EngineApi } from './engine-api.js';
import { LABEL, serviceSpec, type SwarmServiceSpec } from './service-spec.js';

/** A machine of the swarm, as `GET /status` lists it. */
export interface SwarmNode {
  id: string;
  hostname: string;
  role: 'manager' | 'worker';
  /** ready, down, unknown, disconnected. */
  state: string;
  /** active, pause, drain: whether Swarm places new tasks there. */
  availability: string;
  leader: boolean;
  labels: Record<string, string>;
  cpus: number;
  memoryMb: number;
  /** What running tasks have not reserved. */
  freeCpus: number;
  freeMemoryMb: number;
}

/** One task of a service: where it runs and its address on its workspace's network. */
export interface SwarmTask {
  id: string;
  nodeId: string;
  /** new … running, complete, failed, shutdown, rejected (Swarm's). */
  state: string;
  desiredState: string;
  image: string;
  /** Its address on the service's network, without the prefix length; '' until it has one. */
  address: string;
  containerId: string;
  error: string;
}

export interface SwarmLogLine {
  /** RFC 3339, with nanoseconds, as the engine wrote it. */
  at: string;
  taskId: string;
  nodeId: string;
  stream: 'stdout' | 'stderr';
  text: string;
}

/** Slipway's use of a Docker Swarm (docs/swarm.md): its nodes, a network per workspace, a Swarm service per service. */
export interface SwarmCluster {
  nodes(): Promise<SwarmNode[]>;
  /** The workspace's overlay network (made when missing): its id. */
  workspaceNetwork(workspaceId: string): Promise<string>;
  /** Creates the Swarm service, or updates it (a rolling update, start-first). */
  deploy(spec: SwarmServiceSpec): Promise<void>;
  /** Its tasks replaced by new ones of the same spec, one at a time (Render's restart). */
  restart(name: string): Promise<void>;
  tasks(name: string): Promise<SwarmTask[]>;
  /**
   * The last `tail` lines its tasks printed, on every node, through the manager (each node's json-file logs): oldest
   * first, each with its task and node.
   */
  logs(name: string, opts: { tail: number }): Promise<SwarmLogLine[]>;
  /** Gone, with its tasks; nothing when there is none. */
  remove(name: string): Promise<void>;
  close(): Promise<void>;
}

interface EngineNode {
  ID: string;
  Description: { Hostname: string; Resources: { NanoCPUs: number; MemoryBytes: number } };
  Spec: { Role: 'manager' | 'worker'; Availability: string; Labels?: Record<string, string> };
  Status: { State: string };
  ManagerStatus?: { Leader?: boolean };
}

interface EngineTask {
  ID: string;
  NodeID?: string;
  DesiredState: string;
  Spec: {
    ContainerSpec: { Image: string };
    Resources?: { Reservations?: { NanoCPUs?: number; MemoryBytes?: number } };
  };
  Status: { State: string; Err?: string; ContainerStatus?: { ContainerID?: string } };
  NetworksAttachments?: Array<{ Network: { ID: string; Spec: { Name: string } }; Addresses?: string[] }>;
}

const MB = 1024 * 1024;
const filters = (f: Record<string, string[]>) => ({ filters: JSON.stringify(f) });
const NETWORK_PREFIX = 'slipway-';
export const networkName = (workspaceId: string) => `${NETWORK_PREFIX}${workspaceId}`;

/**
 * The cluster behind a manager's Engine API. `encrypted`: workspaces' overlays carry their traffic in IPsec (Swarm's
 * `encrypted` option), which needs the kernel's ESP support on every node (docs/swarm.md, "Networks").
 */
export function swarmCluster(api: EngineApi, opts: { encrypted: boolean }): SwarmCluster {
  const cluster: SwarmCluster = {
    async nodes() {
      const [nodes, tasks] = await Promise.all([
        api.call<EngineNode[]>('GET', '/nodes'),
        api.call<EngineTask[]>('GET', '/tasks', { query: filters({ 'desired-state': ['running'] }) }),
      ]);
      return nodes.map((node) => {
        const reserved = tasks
          .filter((t) => t.NodeID === node.ID)
          .reduce(
            (sum, t) => ({
              cpus: sum.cpus + (t.Spec.Resources?.Reservations?.NanoCPUs ?? 0) / 1e9,
              memory: sum.memory + (t.Spec.Resources?.Reservations?.MemoryBytes ?? 0) / MB,
            }),
            { cpus: 0, memory: 0 },
          );
        const cpus = node.Description.Resources.NanoCPUs / 1e9;
        const memoryMb = Math.floor(node.Description.Resources.MemoryBytes / MB);
        return {
          id: node.ID,
          hostname: node.Description.Hostname,
          role: node.Spec.Role,
          state: node.Status.State,
          availability: node.Spec.Availability,
          leader: node.ManagerStatus?.Leader === true,
          labels: node.Spec.Labels ?? {},
          cpus,
          memoryMb,
          freeCpus: Math.round((cpus - reserved.cpus) * 1000) / 1000,
          freeMemoryMb: Math.floor(memoryMb - reserved.memory),
        };
      });
    },
    async workspaceNetwork(workspaceId) {
      const name = networkName(workspaceId);
      const found = await api.call<Array<{ Id: string; Name: string }>>('GET', '/networks', {
        query: filters({ name: [name] }),
      });
      // The filter matches a part of the name: keep the exact one.
      const existing = found.find((n) => n.Name === name);
      if (existing) return existing.Id;
      // Two deploys of a new workspace at once: the second's create is refused (CheckDuplicate), and it takes the first's.
      const made = await api
        .call<{ Id: string }>('POST', '/networks/create', {
          body: {
            Name: name,
            Driver: 'overlay',
            // Only Swarm's tasks join it, never a container started by hand on a node.
            Attachable: false,
            CheckDuplicate: true,
            Options: opts.encrypted ? { encrypted: '' } : {},
            Labels: { [LABEL.workspace]: workspaceId },
          },
        })
        .catch(async (err: unknown) => {
          if (!(err instanceof EngineError && err.status === 409)) throw err;
          return { Id: await cluster.workspaceNetwork(workspaceId) };
        });
      return made.Id;
    },
    async deploy(spec) {
      const body = serviceSpec(spec, await cluster.workspaceNetwork(spec.workspaceId));
      const current = await inspect(spec.name);
      if (!current) await api.call('POST', '/services/create', { body });
      else
        await api.call('POST', `/services/${current.ID}/update`, {
          query: { version: String(current.Version.Index) },
          body,
        });
    },
    async restart(name) {
      const current = await inspect(name);
      if (!current) throw new EngineError(404, `no service ${name}`);
      const spec = current.Spec;
      spec.TaskTemplate.ForceUpdate = (spec.TaskTemplate.ForceUpdate ?? 0) + 1;
      await api.call('POST', `/services/${current.ID}/update`, {
        query: { version: String(current.Version.Index) },
        body: spec,
      });
    },
    async tasks(name) {
      // A service that is gone has no tasks (the engine answers 404 to the filter).
      const tasks = await api
        .call<EngineTask[]>('GET', '/tasks', { query: filters({ service: [name] }) })
        .catch((err: unknown) => {
          if (err instanceof EngineError && err.status === 404) return [];
          throw err;
        });
      return tasks.map((t) => ({
        id: t.ID,
        nodeId: t.NodeID ?? '',
        state: t.Status.State,
        desiredState: t.DesiredState,
        image: t.Spec.ContainerSpec.Image,
        address:
          t.NetworksAttachments?.find((a) => a.Network.Spec.Name.startsWith(NETWORK_PREFIX))?.Addresses?.[0]?.split(
            '/',
          )[0] ?? '',
        containerId: t.Status.ContainerStatus?.ContainerID ?? '',
        error: t.Status.Err ?? '',
      }));
    },
    async logs(name, { tail }) {
      const query = { stdout: '1', stderr: '1', timestamps: '1', details: '1', tail: String(tail) };
      // A line is at most 16 KiB in the engine's logs: the answer is bounded by the tail.
      const frames = await api.frames(`/services/${name}/logs`, query, (tail + 1) * 17 * 1024);
      return frames.flatMap((frame) => parseLogLines(frame.text, frame.stream)).sort((a, b) => (a.at < b.at ? -1 : 1));
    },
    async remove(name) {
      await api.call('DELETE', `/services/${name}`).catch((err: unknown) => {
        if (!(err instanceof EngineError && err.status === 404)) throw err;
      });
    },
    close: () => api.close(),
  };
  const inspect = (name: string) =>
    api
      .call<{
        ID: string;
        Version: { Index: number };
        Spec: { TaskTemplate: { ForceUpdate?: number } };
      }>('GET', `/services/${name}`)
      .catch((err: unknown) => {
        if (err instanceof EngineError && err.status === 404) return undefined;
        throw err;
      });
  return cluster;
}

/** `<timestamp> com.docker.swarm.node.id=…,com.docker.swarm.service.id=…,com.docker.swarm.task.id=… <text>` lines. */
function parseLogLines(text: string, stream: 'stdout' | 'stderr'): SwarmLogLine[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [at = '', details = '', ...rest] = line.split(' ');
      const taskId = /com\.docker\.swarm\.task\.id=([^,]+)/.exec(details)?.[1] ?? '';
      const nodeId = /com\.docker\.swarm\.node\.id=([^,]+)/.exec(details)?.[1] ?? '';
      return { at, taskId, nodeId, stream, text: rest.join(' ') };
    });
}
