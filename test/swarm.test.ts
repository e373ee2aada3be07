/**
 * Slipway's swarm driver on a real Docker Swarm of three nodes on this machine (docs/swarm.md; test/helpers/swarm.ts):
 * the nodes `GET /status` lists; a service spread over the nodes under its plan's limits and reached at its name on
 * its workspace's overlay; another workspace's task that reaches none of it; the nodes' guard, which keeps tasks off
 * the machine's services; a datastore on the node labelled for it,
 * its data on that node's volume; and a worker's machine lost, whose tasks move while the name keeps answering.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSwarmCluster, type SwarmCluster, type SwarmTask } from '../src/runtime/swarm/index.js';
import { nodeGuardScript } from '../src/runtime/swarm/node-guard.js';
import { hasContainerEngine, startRegistry, type TestRegistry } from './helpers/containers.js';
import { bootServer, type TestServer } from './helpers/server.js';
import { hasDockerd, runningTasks, shellIn, startSwarm, swarmImageTar, type TestSwarm } from './helpers/swarm.js';
import { waitFor } from './helpers/wait.js';

const port = 21000 + Math.floor(Math.random() * 20000);
const limits = { memoryMb: 96, cpuMillicores: 250, pids: 64, diskMb: 64 };
const web = (workspaceId: string, image: string) => ({
  name: `web-${workspaceId}`,
  workspaceId,
  hostnames: [`site-${workspaceId}`],
  image,
  command: 'echo "serving on $(hostname)"; exec httpd -f -p 10000 -h /www',
  env: { PORT: '10000' },
  replicas: 3,
  limits,
});
const prober = (workspaceId: string, image: string) => ({
  name: `probe-${workspaceId}`,
  workspaceId,
  hostnames: [],
  image,
  command: 'exec sleep 100000',
  env: {},
  replicas: 1,
  limits,
});

describe.skipIf(!hasDockerd || !hasContainerEngine)('a Docker Swarm of three nodes', () => {
  let swarm: TestSwarm;
  let registry: TestRegistry;
  let server: TestServer;
  let cluster: SwarmCluster;
  let image: string;
  let redisImage: string;

  const running = (name: string, count: number) => runningTasks(cluster, name, count);
  const shell = (task: SwarmTask, line: string) => shellIn(swarm, task, line);

  beforeAll(async () => {
    swarm = await startSwarm({ size: 3, registryPorts: [port] });
    registry = await startRegistry(swarm.hostAddress, undefined, port);
    const tar = swarmImageTar();
    image = registry.pushTar('swarm/busybox:1', tar);
    rmSync(tar);
    const redisTar = swarmImageTar({ redis: true });
    redisImage = registry.pushTar('swarm/redis:1', redisTar);
    rmSync(redisTar);
    // This machine's kernel has no ESP (IPsec), so its overlays cannot be encrypted (docs/swarm.md, "Networks").
    server = await bootServer({ SLIPWAY_SWARM_DOCKER_HOST: swarm.managerHost, SLIPWAY_SWARM_ENCRYPTED: '0' });
    cluster = createSwarmCluster({ dockerHost: swarm.managerHost, tls: undefined, encrypted: false });
  }, 240_000);

  /** An operator's label on a node (`docker node update --label-add`). */
  const labelNode = async (node: { nodeId: string }, labels: Record<string, string>) => {
    const api = swarm.nodes[0]!.api;
    const current = await api.call<{ Version: { Index: number }; Spec: { Labels?: Record<string, string> } }>(
      'GET',
      `/nodes/${node.nodeId}`,
    );
    await api.call('POST', `/nodes/${node.nodeId}/update`, {
      query: { version: String(current.Version.Index) },
      body: { ...current.Spec, Labels: { ...current.Spec.Labels, ...labels } },
    });
  };

  afterAll(async () => {
    await cluster?.close();
    await server?.close();
    await registry?.close();
    await swarm?.close();
  }, 120_000);

  it('spreads a service over the nodes, under its plan, reached at its names on its workspace network', async () => {
    await cluster.deploy(web('wsa', image));
    await cluster.deploy(prober('wsa', image));
    const tasks = await running('web-wsa', 3);
    expect(new Set(tasks.map((t) => t.nodeId)).size).toBe(3);
    const [probe] = await running('probe-wsa', 1);

    // Each task answers at its own address, and the service's name resolves to all of them (dnsrr: no virtual IP).
    const names = await shell(probe!, 'nslookup site-wsa 127.0.0.11');
    for (const task of tasks) expect(names.out).toContain(task.address);
    const ids = new Set<string>();
    for (const task of tasks) {
      const reply = await shell(probe!, `timeout 5 wget -qO- http://${task.address}:10000/cgi-bin/id`);
      expect(reply.ok, reply.out).toBe(true);
      ids.add(reply.out);
    }
    expect(ids.size).toBe(3);
    expect((await shell(probe!, 'timeout 5 wget -qO- http://site-wsa:10000/')).out).toBe('web');

    // What each task printed, on its node, read through the manager, with its task and node.
    const lines = (await cluster.logs('web-wsa', { tail: 10 })).filter((l) => l.text.startsWith('serving on'));
    expect(lines.map((l) => [l.taskId, l.nodeId, l.stream, l.text]).sort()).toEqual(
      tasks.map((t) => [t.id, t.nodeId, 'stdout', `serving on ${t.containerId.slice(0, 12)}`]).sort(),
    );
    expect(lines.every((l) => !Number.isNaN(Date.parse(l.at)))).toBe(true);

    // The plan, as the node's engine applied it to the task's container.
    const node = swarm.nodes.find((n) => n.nodeId === tasks[0]!.nodeId)!;
    const container = await node.api.call<{
      Config: { User: string };
      HostConfig: { Memory: number; NanoCpus: number; PidsLimit: number; CapDrop: string[]; Init: boolean };
    }>('GET', `/containers/${tasks[0]!.containerId}/json`);
    expect(container.HostConfig).toMatchObject({ Memory: 96 * 1024 * 1024, NanoCpus: 250_000_000, PidsLimit: 64 });
    expect(container.HostConfig.CapDrop).toContain('ALL');
    expect(container.HostConfig.Init).toBe(true);
    expect(container.Config.User).toBe('65534:65534');
  }, 180_000);

  it('lists the nodes in GET /status, with what their tasks reserved taken from what is free', async () => {
    const res = await fetch(`${server.url}/status`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      components: Array<{ name: string; status: string }>;
      swarm: { nodes: Array<{ id: string; role: string; state: string; memoryMb: number; freeMemoryMb: number }> };
    };
    expect(body.components).toContainEqual({ name: 'swarm', status: 'operational' });
    expect(body.swarm.nodes.map((n) => n.id).sort()).toEqual(swarm.nodes.map((n) => n.nodeId).sort());
    expect(body.swarm.nodes.filter((n) => n.role === 'manager')).toHaveLength(1);
    expect(body.swarm.nodes.every((n) => n.state === 'ready')).toBe(true);
    // Every node runs a web task (96 MB reserved); the probe's node one more.
    const reserved = body.swarm.nodes.map((n) => n.memoryMb - n.freeMemoryMb).sort((a, b) => a - b);
    expect(reserved).toEqual([96, 96, 192]);
  });

  it("keeps another workspace's task away from the service: not its name, nor its tasks' addresses", async () => {
    await cluster.deploy(prober('wsb', image));
    const [outsider] = await running('probe-wsb', 1);
    const tasks = await running('web-wsa', 3);
    expect((await shell(outsider!, 'nslookup site-wsa 127.0.0.11')).ok).toBe(false);
    for (const task of tasks) {
      const reply = await shell(outsider!, `timeout 3 wget -qO- http://${task.address}:10000/`);
      expect(reply.ok, `reached ${task.address}: ${reply.out}`).toBe(false);
    }
    // Nor through the bridge every task of a node shares for its way out (docker_gwbridge, whose tasks Docker keeps
    // apart): the web task on the outsider's own node, at its address there.
    const neighbour = tasks.find((t) => t.nodeId === outsider!.nodeId)!;
    const gateway = (await shell(neighbour, "ip -4 -o addr show eth1 | sed 's/.* inet \\([0-9.]*\\).*/\\1/'")).out;
    expect(gateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const reply = await shell(outsider!, `timeout 3 wget -qO- http://${gateway}:10000/`);
    expect(reply.ok, `reached ${gateway}: ${reply.out}`).toBe(false);
  }, 120_000);

  it("keeps tasks off the machine's services and its networks once the nodes run Slipway's guard, their own traffic unchanged", async () => {
    const [outsider] = await running('probe-wsb', 1);
    const [probe] = await running('probe-wsa', 1);
    // The registry on the host's address on the nodes' network: a service of the machine, as a task sees it.
    const registryUrl = `http://${swarm.hostAddress}:${port}/v2/`;
    const before = await shell(outsider!, `timeout 3 wget -qO- ${registryUrl}`);
    expect(before.ok, `without the guard a task reaches the machine: ${before.out}`).toBe(true);

    for (const node of swarm.nodes)
      execFileSync('nsenter', [`--net=/run/netns/${node.netns}`, 'sh'], { input: nodeGuardScript() });
    for (const task of [outsider!, probe!]) {
      const after = await shell(task, `timeout 3 wget -qO- ${registryUrl}`);
      expect(after.ok, `reached ${registryUrl}: ${after.out}`).toBe(false);
    }
    // Applied again: the same rules, not twice.
    for (const node of swarm.nodes)
      execFileSync('nsenter', [`--net=/run/netns/${node.netns}`, 'sh'], { input: nodeGuardScript() });
    const rules = execFileSync('nsenter', [`--net=/run/netns/${swarm.nodes[0]!.netns}`, 'iptables', '-S']).toString();
    expect(rules.match(/-j SLIPWAY-TASKS-IN/g)).toHaveLength(1);
    expect(rules.match(/-j SLIPWAY-TASKS-OUT/g)).toHaveLength(1);
    // The workspace's own service, over its overlay, answers as before.
    expect((await shell(probe!, 'timeout 5 wget -qO- http://site-wsa:10000/')).out).toBe('web');
  }, 60_000);

  it("runs a datastore on the node labelled for it, its data on that node's volume, used from another node", async () => {
    const [, store, other] = swarm.nodes;
    await labelNode(store!, { 'slipway.datastores': 'true' });
    const kv = {
      ...prober('wsa', redisImage),
      name: 'kv-wsa',
      hostnames: ['kv-wsa'],
      command: 'exec redis-server --port 6379 --dir /data --appendonly yes --appendfsync always --protected-mode no',
      constraints: ['node.labels.slipway.datastores == true'],
      volumes: [{ name: 'kv-wsa-data', target: '/data' }],
    };
    await cluster.deploy(kv);
    await cluster.deploy({ ...prober('wsa', image), name: 'app-wsa', constraints: [`node.id == ${other!.nodeId}`] });
    const [server] = await running('kv-wsa', 1);
    const [app] = await running('app-wsa', 1);
    expect(server!.nodeId).toBe(store!.nodeId);
    expect(app!.nodeId).not.toBe(store!.nodeId);
    const redis = (commands: string) =>
      shell(app!, `printf '${commands}' | timeout 5 nc kv-wsa 6379`).then((r) => r.out.replaceAll('\r', ''));
    expect(await redis('SET greeting hello\\r\\n')).toBe('+OK');

    // A new task of it, on the same node, finds what the old one wrote.
    await cluster.restart('kv-wsa');
    await waitFor('a new kv-wsa task', async () => (await running('kv-wsa', 1))[0]!.id !== server!.id, 60_000);
    const [again] = await running('kv-wsa', 1);
    expect(again!.nodeId).toBe(store!.nodeId);
    await waitFor('the value again', async () => (await redis('GET greeting\\r\\n')) === '$5\nhello', 30_000);
  }, 180_000);

  it("moves the tasks of a node whose machine dies, and its service's name answers again", async () => {
    const [manager, , victim] = swarm.nodes;
    await cluster.deploy({ ...prober('wsa', image), name: 'watch-wsa', constraints: ['node.role == manager'] });
    const [watcher] = await running('watch-wsa', 1);
    expect(watcher!.nodeId).toBe(manager!.nodeId);
    expect((await running('web-wsa', 3)).some((t) => t.nodeId === victim!.nodeId)).toBe(true);

    const killedAt = Date.now();
    swarm.killNode(victim!);
    // A client of the name, as an app of the workspace would be: each request resolves it again.
    let failed = 0;
    let streak = 0;
    let recoveredAt = 0;
    while (Date.now() - killedAt < 120_000) {
      const reply = await shell(watcher!, 'timeout 2 wget -qO- http://site-wsa:10000/');
      if (reply.ok) streak++;
      else [failed, streak] = [failed + 1, 0];
      if (streak >= 20) {
        const tasks = (await cluster.tasks('web-wsa')).filter(
          (t) => t.state === 'running' && t.desiredState === 'running',
        );
        if (tasks.length === 3 && tasks.every((t) => t.nodeId !== victim!.nodeId)) {
          recoveredAt = Date.now();
          break;
        }
      }
    }
    console.log(
      `swarm: a worker lost; ${failed} failed requests, every request served again after ${recoveredAt - killedAt} ms`,
    );
    expect(recoveredAt, 'the tasks moved and the name answers').toBeGreaterThan(0);
    const nodes = await cluster.nodes();
    expect(nodes.find((n) => n.id === victim!.nodeId)?.state).toBe('down');
  }, 180_000);

  it('removes a service and its tasks', async () => {
    await cluster.remove('web-wsa');
    await waitFor('no tasks of web-wsa', async () => (await cluster.tasks('web-wsa')).length === 0, 60_000);
    await cluster.remove('web-wsa');
  }, 90_000);
});
