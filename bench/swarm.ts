/**
 * Slipway's services on a real Docker Swarm of three nodes on this machine (issue 37; test/helpers/swarm.ts), through
 * its swarm driver (src/runtime/swarm/), measured from a client task on the manager's node that asks the service's
 * name each time, as a workspace's app would (no router yet: docs/swarm.md, "What is left"):
 * 1. a service created until all its tasks run: 3 replicas (one per node) against 1; ratio 3 / 1;
 * 2. a rolling update (start-first) under that client: requests failed of those sent, against the same client's
 *    failures over as long with no update (the baseline);
 * 3. a worker's machine lost (its dockerd, containerd and containers SIGKILLed): requests failed, and the time until
 *    the manager says the node is down, until its tasks run elsewhere, and until every request succeeds again.
 * Skipped where there is no dockerd (Debian's docker.io) or no Podman to make the image.
 */
import { rmSync } from 'node:fs';
import { createSwarmCluster, type SwarmTask } from '../src/runtime/swarm/index.js';
import { hasContainerEngine, startRegistry } from '../test/helpers/containers.js';
import { hasDockerd, runningTasks, shellIn, startSwarm, swarmImageTar, type TestSwarm } from '../test/helpers/swarm.js';
import { log, median, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const ROUNDS = SMOKE ? 1 : 3;
const limits = { memoryMb: 64, cpuMillicores: 250, pids: 64, diskMb: 64 };

/** Requests from `client` to the name until `done()`, one at a time: how many were sent and how many failed. */
async function requestWhile(swarm: TestSwarm, client: SwarmTask, done: () => Promise<boolean> | boolean) {
  let sent = 0;
  let failed = 0;
  while (!(await done())) {
    sent++;
    if (!(await shellIn(swarm, client, 'timeout 2 wget -qO- http://site:10000/')).ok) failed++;
  }
  return { sent, failed };
}

async function main() {
  if (!hasDockerd || !hasContainerEngine) {
    log('swarm: skipped (needs Debian docker.io and Podman)');
    return;
  }
  const port = 21000 + Math.floor(Math.random() * 20000);
  const swarm = await startSwarm({ size: 3, registryPorts: [port] });
  const registry = await startRegistry(swarm.hostAddress, undefined, port);
  const cluster = createSwarmCluster({ dockerHost: swarm.managerHost, tls: undefined, encrypted: false });
  try {
    const images = ['1', '2'].map((version) => {
      const tar = swarmImageTar({ version });
      const ref = registry.pushTar(`bench/web:${version}`, tar);
      rmSync(tar);
      return ref;
    });
    const web = (name: string, replicas: number, image = images[0]!) => ({
      name,
      workspaceId: 'bench',
      hostnames: name === 'web' ? ['site'] : [],
      image,
      command: 'exec httpd -f -p 10000 -h /www',
      env: {},
      replicas,
      limits,
    });

    // 1. Create → every task running.
    const created: Record<number, number[]> = { 1: [], 3: [] };
    for (let round = 0; round < ROUNDS; round++)
      for (const replicas of [1, 3]) {
        const name = `spread-${replicas}-${round}`;
        const started = performance.now();
        await cluster.deploy(web(name, replicas));
        await runningTasks(cluster, name, replicas);
        created[replicas]!.push(performance.now() - started);
        await cluster.remove(name);
      }

    await cluster.deploy(web('web', 3));
    const [manager] = swarm.nodes;
    await cluster.deploy({ ...web('client', 1), command: 'exec sleep 100000', constraints: ['node.role == manager'] });
    const [client] = await runningTasks(cluster, 'client', 1);
    await runningTasks(cluster, 'web', 3);

    // 2. A rolling update against as long without one.
    const updateStarted = performance.now();
    await cluster.deploy(web('web', 3, images[1]));
    const updated = await requestWhile(swarm, client!, async () => {
      const service = await manager!.api.call<{ UpdateStatus?: { State: string } }>('GET', '/services/web');
      return service.UpdateStatus?.State === 'completed';
    });
    const updateMs = performance.now() - updateStarted;
    const quietUntil = performance.now() + updateMs;
    const quiet = await requestWhile(swarm, client!, () => performance.now() > quietUntil);

    // 3. A worker lost.
    // A worker that runs a web task (an update may have left two on one node).
    const tasks = await runningTasks(cluster, 'web', 3);
    const victim = swarm.nodes.slice(1).find((n) => tasks.some((t) => t.nodeId === n.nodeId));
    if (!victim) throw new Error('no web task on a worker to lose');
    const killedAt = performance.now();
    swarm.killNode(victim);
    let [downMs, movedMs, servedMs] = [0, 0, 0];
    const lost = { sent: 0, failed: 0 };
    // Served again: from the first of the last 20 successes in a row, once the tasks run elsewhere.
    let streakFrom = 0;
    let streak = 0;
    while (performance.now() - killedAt < 120_000) {
      const at = performance.now() - killedAt;
      lost.sent++;
      if ((await shellIn(swarm, client!, 'timeout 2 wget -qO- http://site:10000/')).ok) {
        if (streak++ === 0) streakFrom = at;
      } else [lost.failed, streak] = [lost.failed + 1, 0];
      if (!downMs && (await cluster.nodes()).find((n) => n.id === victim.nodeId)?.state === 'down')
        downMs = performance.now() - killedAt;
      if (!movedMs) {
        const now = (await cluster.tasks('web')).filter((t) => t.state === 'running' && t.desiredState === 'running');
        if (now.length === 3 && now.every((t) => t.nodeId !== victim.nodeId)) movedMs = performance.now() - killedAt;
      }
      if (movedMs && streak >= 20) {
        servedMs = streakFrom;
        break;
      }
    }
    if (!servedMs) throw new Error('the service did not answer every request again within 120 s');

    const ms = (values: number[]) => Math.round(median(values));
    log(
      table(
        ['figure', 'value'],
        [
          ['create → running, 1 replica (ms, median)', ms(created[1]!)],
          ['create → running, 3 replicas on 3 nodes (ms, median)', ms(created[3]!)],
          ['ratio 3 / 1', (median(created[3]!) / median(created[1]!)).toFixed(2)],
          ['rolling update (start-first): failed / sent', `${updated.failed} / ${updated.sent}`],
          ['  as long without an update: failed / sent', `${quiet.failed} / ${quiet.sent}`],
          ['  the update took (ms)', Math.round(updateMs)],
          ['worker lost: failed / sent', `${lost.failed} / ${lost.sent}`],
          ['  node down, as the manager says (ms)', Math.round(downMs)],
          ['  its tasks running elsewhere (ms)', Math.round(movedMs)],
          ['  every request served again (ms)', Math.round(servedMs)],
        ],
      ),
    );
  } finally {
    await cluster.close();
    await registry.close();
    await swarm.close();
  }
}

await main();
