/**
 * A real Docker Swarm on this one machine (docs/swarm.md, "A swarm on one machine"): a dockerd per node, each in a
 * network namespace of the test's own, with its own data root, exec root and socket, the namespaces joined by a bridge
 * the test makes; the first node initialises the swarm and is its manager, the others join as workers. Everything is
 * removed by close().
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  realpathSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import type { SwarmCluster, SwarmTask } from '../../src/runtime/swarm/cluster.js';
import { demux, engineApi, type EngineApi } from '../../src/runtime/swarm/engine-api.js';
import { librariesOf } from './containers.js';
import { waitFor } from './wait.js';

/** Whether this machine can run a swarm: Debian's docker.io (dockerd 20.10) and iproute2. */
export const hasDockerd = existsSync('/usr/sbin/dockerd') && existsSync('/usr/bin/containerd');

export interface SwarmNodeHandle {
  name: string;
  /** Its address on the test's bridge. */
  address: string;
  socket: string;
  api: EngineApi;
  /** Its Swarm node id. */
  nodeId: string;
  netns: string;
}

export interface TestSwarm {
  nodes: SwarmNodeHandle[];
  /** The manager's Engine API (`unix:///…`). */
  managerHost: string;
  /** The host's address on the bridge: where the nodes reach a registry the test starts. */
  hostAddress: string;
  /**
   * The node's machine dies: SIGKILL to its dockerd, containerd and every process of its containers (found by their
   * cgroups, under the node's --cgroup-parent). Its address stays on the bridge, answering nothing.
   */
  killNode(node: SwarmNodeHandle): void;
  /** Runs `cmd` in a task's container, on its node; its output (rejects on a non-zero exit). */
  exec(task: { nodeId: string; containerId: string }, cmd: string[]): Promise<string>;
  close(): Promise<void>;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/**
 * A /24 of 10.241.0.0/16 that no route of the host's uses: not Slipway's default network range (10.213.0.0/16), whose
 * /24s other test files' servers take while this runs, nor any test's SLIPWAY_NETWORK_CIDR.
 */
function freeSubnet(): string {
  const routes = ip('-4', 'route', 'show', 'table', 'all');
  for (let tries = 0; tries < 50; tries++) {
    const third = 1 + Math.floor(Math.random() * 250);
    if (!routes.includes(`10.241.${third}.`)) return `10.241.${third}`;
  }
  throw new Error('no free /24 in 10.241.0.0/16');
}

/** `size` nodes, the first the manager; `insecureRegistries` are host:port the nodes pull from over plain HTTP. */
export async function startSwarm(opts: { size: number; registryPorts?: number[] }): Promise<TestSwarm> {
  const id = randomBytes(3).toString('hex');
  const subnet = freeSubnet();
  const hostAddress = `${subnet}.1`;
  const work = mkdtempSync(path.join(tmpdir(), `slipway-swarm-${id}-`));
  const bridge = `sw${id}`;
  const daemons: ChildProcess[] = [];
  const nodes: SwarmNodeHandle[] = [];
  ip('link', 'add', bridge, 'type', 'bridge');
  ip('addr', 'add', `${hostAddress}/24`, 'dev', bridge);
  ip('link', 'set', bridge, 'up');
  const close = async () => {
    await Promise.all(nodes.map((n) => n.api.close().catch(() => {})));
    for (const d of daemons) d.kill('SIGTERM');
    await Promise.all(daemons.map((d) => exited(d, 20_000)));
    for (let i = 0; i < opts.size; i++) {
      const netns = `sw${id}n${i}`;
      // What dockerd left running there (its containers' shims, a killed node's containers), then the namespace.
      killCgroups(`slipway-swarm-${id}-node${i}`);
      for (const pid of pidsIn(netns)) tryKill(pid);
      try {
        ip('netns', 'del', netns);
      } catch {
        /* never made */
      }
    }
    try {
      ip('link', 'del', bridge);
    } catch {
      /* gone with its last veth */
    }
    removeCgroups(`slipway-swarm-${id}-`);
    unmountUnder(work);
    if (!process.env.SLIPWAY_KEEP_SWARM_LOGS) rmSync(work, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < opts.size; i++) {
      const name = `node${i}`;
      const netns = `sw${id}n${i}`;
      const address = `${subnet}.${11 + i}`;
      ip('netns', 'add', netns);
      ip('link', 'add', `sw${id}v${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
      ip('link', 'set', `sw${id}v${i}`, 'master', bridge, 'up');
      ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      ip('-n', netns, 'link', 'set', 'eth0', 'up');
      ip('-n', netns, 'link', 'set', 'lo', 'up');
      ip('-n', netns, 'route', 'add', 'default', 'via', hostAddress);
      const dir = path.join(work, name);
      mkdirSync(dir);
      const socket = path.join(dir, 'docker.sock');
      // nsenter, not `ip netns exec`: that remounts /sys, which hides the cgroup mounts dockerd needs. Its iptables
      // rules (docker_gwbridge's isolation) are the namespace's own.
      const args = ['--net=/run/netns/' + netns, 'dockerd', '--bridge=none', '--storage-driver=vfs'];
      args.push('--data-root', path.join(dir, 'data'), '--exec-root', path.join(dir, 'exec'));
      args.push('--host', `unix://${socket}`, '--pidfile', path.join(dir, 'pid'));
      args.push('--cgroup-parent', `slipway-swarm-${id}-${name}`);
      for (const port of opts.registryPorts ?? []) args.push('--insecure-registry', `${hostAddress}:${port}`);
      const log = path.join(dir, 'dockerd.log');
      const out = openSync(log, 'a');
      const child = spawn('nsenter', args, { stdio: ['ignore', out, out] });
      closeSync(out);
      daemons.push(child);
      const api = engineApi(`unix://${socket}`);
      await waitFor(
        `dockerd of ${name}`,
        () =>
          api.call('GET', '/_ping').then(
            () => true,
            () => false,
          ),
        30_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; the end of its log: ${readFileSync(log, 'utf8').slice(-1500)}`);
      });
      nodes.push({ name, address, socket, api, nodeId: '', netns });
    }
    const [manager, ...workers] = nodes;
    await manager!.api.call('POST', '/swarm/init', {
      body: { ListenAddr: `${manager!.address}:2377`, AdvertiseAddr: manager!.address },
    });
    const swarm = await manager!.api.call<{ JoinTokens: { Worker: string } }>('GET', '/swarm');
    for (const worker of workers)
      await worker.api.call('POST', '/swarm/join', {
        body: {
          ListenAddr: `${worker.address}:2377`,
          AdvertiseAddr: worker.address,
          RemoteAddrs: [`${manager!.address}:2377`],
          JoinToken: swarm.JoinTokens.Worker,
        },
      });
    for (const node of nodes)
      node.nodeId = (await node.api.call<{ Swarm: { NodeID: string } }>('GET', '/info')).Swarm.NodeID;
    await waitFor(
      `${opts.size} ready nodes`,
      async () =>
        (await manager!.api.call<Array<{ Status: { State: string } }>>('GET', '/nodes')).filter(
          (n) => n.Status.State === 'ready',
        ).length === opts.size,
      30_000,
    );
  } catch (err) {
    await close();
    throw err;
  }
  return {
    nodes,
    managerHost: `unix://${nodes[0]!.socket}`,
    hostAddress,
    killNode(node) {
      for (const pid of pidsIn(node.netns)) tryKill(pid);
      killCgroups(`slipway-swarm-${id}-${node.name}`);
    },
    async exec(task, cmd) {
      const node = nodes.find((n) => n.nodeId === task.nodeId);
      if (!node) throw new Error(`no node ${task.nodeId}`);
      const made = await node.api.call<{ Id: string }>('POST', `/containers/${task.containerId}/exec`, {
        body: { Cmd: cmd, AttachStdout: true, AttachStderr: true },
      });
      return execOutput(node, made.Id);
    },
    close,
  };
}

/**
 * busybox as a web server: `/cgi-bin/id` answers the task's hostname (its container's id), so a reply names its task.
 * With `redis`, this machine's redis-server and its libraries too, and a /data that nobody owns (a new volume takes it).
 */
export function swarmImageTar(opts: { redis?: boolean; version?: string } = {}): string {
  const root = mkdtempSync(path.join(tmpdir(), 'slipway-swarm-rootfs-'));
  chmodSync(root, 0o755); // the image's /: mkdtemp's 0700 would keep nobody out
  const put = (from: string, to = from) => {
    mkdirSync(path.join(root, path.dirname(to)), { recursive: true });
    copyFileSync(from, path.join(root, to));
  };
  put('/bin/busybox');
  for (const tool of ['sh', 'httpd', 'wget', 'nslookup', 'hostname', 'sleep', 'timeout', 'ip', 'nc', 'printf'])
    symlinkSync('busybox', path.join(root, 'bin', tool));
  if (opts.redis) {
    put(realpathSync('/usr/bin/redis-server'), '/usr/bin/redis-server');
    for (const lib of librariesOf('/usr/bin/redis-server')) put(lib);
    mkdirSync(path.join(root, 'data'));
    chownSync(path.join(root, 'data'), 65534, 65534);
  }
  mkdirSync(path.join(root, 'www/cgi-bin'), { recursive: true });
  mkdirSync(path.join(root, 'tmp'));
  writeFileSync(path.join(root, 'www/index.html'), `web${opts.version ?? ''}\n`);
  writeFileSync(path.join(root, 'www/cgi-bin/id'), '#!/bin/sh\necho "Content-Type: text/plain"\necho\nhostname\n');
  chmodSync(path.join(root, 'www/cgi-bin/id'), 0o755);
  mkdirSync(path.join(root, 'etc'));
  writeFileSync(path.join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n');
  const tar = `${root}.tar`;
  execFileSync('tar', ['-C', root, '-cf', tar, '.']);
  rmSync(root, { recursive: true, force: true });
  return tar;
}

/** The service's tasks once `count` of them run (its old ones may still be shutting down); why not, after `timeoutMs`. */
export async function runningTasks(
  cluster: Pick<SwarmCluster, 'tasks'>,
  name: string,
  count: number,
  timeoutMs = 90_000,
): Promise<SwarmTask[]> {
  let tasks: SwarmTask[] = [];
  await waitFor(
    `${count} running tasks of ${name}`,
    async () => {
      tasks = (await cluster.tasks(name)).filter((t) => t.state === 'running' && t.desiredState === 'running');
      return tasks.length === count && tasks.every((t) => t.address && t.containerId);
    },
    timeoutMs,
  ).catch(async (err: Error) => {
    const all = await cluster.tasks(name);
    throw new Error(`${err.message}: ${all.map((t) => `${t.nodeId} ${t.state} ${t.error}`).join('; ')}`);
  });
  return tasks;
}

/** A shell command line run in a task: its output, or the failure's. */
export const shellIn = (swarm: Pick<TestSwarm, 'exec'>, task: SwarmTask, line: string) =>
  swarm.exec(task, ['/bin/sh', '-c', line]).then(
    (out) => ({ ok: true, out: out.trim() }),
    (err: Error & { output?: string }) => ({ ok: false, out: err.output ?? err.message }),
  );

/** Starts an exec and reads its multiplexed stream (8-byte frame headers) to the end, then its exit code. */
async function execOutput(node: SwarmNodeHandle, execId: string): Promise<string> {
  const dispatcher = new Agent({ connect: { socketPath: node.socket } });
  const res = await request(`http://engine/v1.41/exec/${execId}/start`, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ Detach: false, Tty: false }),
  });
  const raw = Buffer.from(await res.body.arrayBuffer());
  await dispatcher.close();
  const out = demux(raw)
    .map((f) => f.text)
    .join('');
  const { ExitCode } = await node.api.call<{ ExitCode: number }>('GET', `/exec/${execId}/json`);
  if (ExitCode !== 0) throw Object.assign(new Error(`exit ${ExitCode}: ${out}`), { exitCode: ExitCode, output: out });
  return out;
}

function exited(child: ChildProcess, ms: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve();
    }, ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function pidsIn(netns: string): number[] {
  try {
    return ip('netns', 'pids', netns).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function tryKill(pid: number) {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

/** The cgroup dirs (of every hierarchy) whose name starts with `prefix`, deepest first. */
function cgroupDirs(prefix: string): string[] {
  const out = execFileSync('find', ['/sys/fs/cgroup', '-depth', '-type', 'd', '-path', `/sys/fs/cgroup/*/${prefix}*`]);
  return out.toString().split('\n').filter(Boolean);
}

function killCgroups(prefix: string) {
  for (const dir of cgroupDirs(prefix))
    for (const pid of readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean))
      tryKill(Number(pid));
}

/** Docker leaves its cgroup parent's dirs behind (empty once their processes are gone). */
function removeCgroups(prefix: string) {
  killCgroups(prefix);
  for (const dir of cgroupDirs(prefix)) {
    try {
      rmdirSync(dir);
    } catch {
      /* a process not yet gone */
    }
  }
}

/** Unmounts what dockerd and its containers left mounted under `dir` (deepest first). */
function unmountUnder(dir: string) {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(dir + '/'))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) {
    try {
      execFileSync('umount', ['-l', m]);
    } catch {
      /* gone */
    }
  }
}
