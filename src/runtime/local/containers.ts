import { readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { run, spawnDetached } from '../../lib/exec.js';
import { storageOf, type PodmanEngine } from '../containers/engine.js';
import * as podman from '../containers/podman.js';
import type { RunResult } from '../../lib/exec.js';
import type { Limits } from '../../model/limits.js';
import { SECRET_FILES_SUBDIR, type ContainerJobSpec, type InstanceHandle, type InstanceSpec } from '../types.js';
import { createHash, randomBytes } from 'node:crypto';
import { groupPathOf } from './cgroups.js';
import type { Attachment } from './network/index.js';
import { isRunning, readStat } from './proc.js';
import { writeSecretFiles } from './secret-files.js';
import type { SandboxPolicy } from './sandbox.js';
import type { ContainerDisks } from './container-disks.js';

/** How often a container's process is checked for having exited (no child of ours to wait for: conmon holds it). */
const EXIT_POLL_MS = 250;
const CALL_TIMEOUT_MS = 60_000;

/** What an env file can hold (one line each); the rest go as arguments. */
function splitEnv(env: Record<string, string>): { file: string; args: Record<string, string> } {
  const lines: string[] = [];
  const args: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (/[\r\n]/.test(value)) args[name] = value;
    else lines.push(`${name}=${value}`);
  }
  return { file: lines.join('\n') + '\n', args };
}

/**
 * Who a container runs as (docs/containers.md, "Users"). With user namespaces: as the image says (its USER, else
 * root), in a namespace of its own whose ids are unprivileged host ids; root keeps the capabilities an image needs to
 * drop to its own user, which act only in that namespace. Without them: the image's USER when it is not root, else
 * Slipway's app user.
 */
interface Identity {
  user: string | undefined;
  idMap?: podman.IdMap;
  /** The image's VOLUMEs (at most MAX_VOLUMES), each mounted as a sized tmpfs. */
  volumes: string[];
}
const MAX_VOLUMES = 16;

/** Each image's identity and volumes, by storage and tag: a deploy's tag never moves, so Podman is asked once. */
const identities = new Map<string, Identity>();
const IDENTITIES_MAX = 1000;

/** Root's capabilities in its own namespace: Podman's defaults but those that change files' capabilities or roots. */
const NAMESPACED_ROOT = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'NET_BIND_SERVICE', 'SETGID', 'SETUID'];

/** The first host id of a service's range: above 2^31, where no host user is, 65,536 ids per range. */
export const ID_RANGE = { base: 2 ** 31, size: 65_536, count: 16_384 };
export function hostBaseOf(storageDir: string): number {
  const slot = createHash('sha256').update(path.resolve(storageDir)).digest().readUInt32BE(0) % ID_RANGE.count;
  return ID_RANGE.base + slot * ID_RANGE.size;
}

async function identityOf(
  runAs: SandboxPolicy['runAs'],
  engine: PodmanEngine,
  c: { storageDir: string; image: string },
): Promise<Identity> {
  const key = `${c.storageDir}\0${c.image}`;
  const known = identities.get(key);
  if (known) return known;
  const info = await engine.inspect(c.storageDir, c.image);
  if (!info) throw new Error(`image ${c.image} is not in the service's storage`);
  const own = info.user.split(':')[0];
  const root = !own || own === 'root' || own === '0';
  const fallback = runAs ?? { uid: 65534, gid: 65534 };
  const volumes = info.volumes.slice(0, MAX_VOLUMES);
  const identity: Identity = !engine.setup.userNamespaces
    ? { user: root ? `${fallback.uid}:${fallback.gid}` : undefined, volumes }
    : {
        user: undefined,
        volumes,
        idMap: { hostBase: hostBaseOf(c.storageDir), size: ID_RANGE.size, capabilities: root ? NAMESPACED_ROOT : [] },
      };
  if (identities.size >= IDENTITIES_MAX) identities.delete(identities.keys().next().value!);
  identities.set(key, identity);
  return identity;
}

/** Removes the groups runc made in the hierarchies Slipway does not limit with (blkio, devices, …), once empty. */
function removeStrayGroups(instanceId: string): void {
  let roots: string[] = [];
  try {
    roots = readdirSync('/sys/fs/cgroup').map((name) => path.join('/sys/fs/cgroup', name));
  } catch {
    return;
  }
  for (const root of ['/sys/fs/cgroup', ...roots]) {
    const dir = path.join(root, groupPathOf(instanceId));
    for (const sub of ['conmon', '.'])
      try {
        if (statSync(path.join(dir, sub)).isDirectory()) rmdirSync(path.join(dir, sub));
      } catch {
        // not there, or still in use
      }
  }
}

export interface ContainerDeps {
  engine: PodmanEngine;
  runAs: SandboxPolicy['runAs'];
  seccompProfile: string | undefined;
  /** Without: storages are plain dirs of the host's disk, and containers' roots stay read-only. */
  disks?: ContainerDisks;
}

/** A container's settings (ContainerRun) from what it runs, its env (written to `envFile`, 0600) and where. */
async function containerRun(
  deps: ContainerDeps,
  c: {
    name: string;
    storageDir: string;
    image: string;
    command?: string;
    env: Record<string, string>;
    envFile: string;
    /** Its secret files' dir (secret-files.ts), mounted at /etc/secrets. */
    secretsDir?: string;
    disk?: { dir: string; mountPath: string } | undefined;
    statusDir?: string;
    /** Where Podman writes the container's process id (an instance's). */
    pidFile?: string;
    limits: Limits;
    labels: Record<string, string>;
  },
  at: { attached: Attachment | undefined; groupDirs: string[] },
): Promise<podman.ContainerRun> {
  // A root the container may write is bounded by its storage's disk; an uncapped storage keeps it read-only.
  const writableRoot = (await deps.disks?.ensure(c.storageDir)) ?? false;
  const env = splitEnv(c.env);
  writeFileSync(c.envFile, env.file, { mode: 0o600 });
  const { attached } = at;
  return {
    name: c.name,
    image: c.image,
    command: c.command,
    cgroupParent: at.groupDirs.length > 0 ? groupPathOf(path.basename(at.groupDirs[0]!)) : undefined,
    netnsPath: attached?.netnsPath,
    hostsFile: attached?.hostsFile,
    resolvConf: attached?.resolvConf,
    ...(await identityOf(deps.runAs, deps.engine, c)),
    envFile: c.envFile,
    writableRoot,
    secretsDir: c.secretsDir,
    disk: c.disk,
    statusDir: c.statusDir,
    pidFile: c.pidFile,
    envArgs: env.args,
    limits: c.limits,
    seccompProfile: deps.seccompProfile,
    labels: c.labels,
  };
}

/**
 * Starts an instance's container (docs/containers.md, "Instances"): in the namespace Slipway made, inside the
 * instance's cgroup (its limits), its output appended to the same files a native instance writes: one `podman run
 * --detach`, given those files, hands them to conmon.
 */
export async function startContainer(
  deps: ContainerDeps,
  spec: InstanceSpec & Required<Pick<InstanceSpec, 'container'>>,
  at: { attached: Attachment | undefined; groupDirs: string[]; stdoutPath: string; stderrPath: string },
): Promise<{ pid: number; startTime: string }> {
  const { engine } = deps;
  const storage = storageOf(spec.container.storageDir);
  const name = `slw-${spec.instanceId}`;
  const envFile = path.join(spec.instanceDir, 'container.env');
  const pidFile = path.join(spec.instanceDir, 'container.pid');
  try {
    const labels = { 'slipway.instance': spec.instanceId, 'slipway.service': spec.serviceId };
    const secretsDir = writeSecretFiles(path.join(spec.instanceDir, SECRET_FILES_SUBDIR), spec.secretFiles, deps.runAs);
    const c = await containerRun(
      deps,
      { ...spec, ...spec.container, command: spec.container.command, name, envFile, secretsDir, labels, pidFile },
      at,
    );
    const code = await new Promise<number | null>((resolve, reject) => {
      let pid: number | undefined;
      const timer = setTimeout(() => {
        try {
          if (pid) process.kill(pid, 'SIGKILL'); // its 'exit' then comes after this rejection, unheard
        } catch {
          // gone meanwhile
        }
        reject(new Error(`podman run did not return within ${CALL_TIMEOUT_MS} ms`));
      }, CALL_TIMEOUT_MS);
      const cmd = podman.runCommand(engine.setup, storage, c, 'detached');
      spawnDetached(cmd, at, (exitCode) => (clearTimeout(timer), resolve(exitCode))).then(
        (spawned) => (pid = spawned),
        (err: unknown) => (clearTimeout(timer), reject(err)),
      );
    });
    if (code !== 0) throw new Error(`podman run failed (exit ${code}): ${JSON.stringify(tailOf(at.stderrPath, 400))}`);
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    // A one-off run (a job) may well have ended already: its status dir, not its process, says how.
    if (spec.container.statusDir && Number.isInteger(pid) && pid > 0 && !readStat(pid)) return { pid, startTime: '' };
    if (!Number.isInteger(pid) || pid <= 0 || !readStat(pid))
      throw new Error(
        `the container exited at once (pid file: ${JSON.stringify(readFileSync(pidFile, 'utf8').trim())}; its stderr: ` +
          `${JSON.stringify(tailOf(at.stderrPath, 400))})`,
      );
    return { pid, startTime: readStat(pid)?.startTime ?? '' };
  } catch (err) {
    await run(podman.removeContainersCommand(engine.setup, storage, [name]), { timeoutMs: CALL_TIMEOUT_MS });
    throw err;
  } finally {
    rmSync(envFile, { force: true });
  }
}

const tailOf = (file: string, chars: number) => readFileSync(file, 'utf8').slice(-chars);

/** Calls `onExit` once the container's process is gone (conmon, not Slipway, is its parent). */
export function watchExit(handle: Pick<InstanceHandle, 'pid' | 'startTime' | 'instanceId'>, onExit: () => void) {
  const timer = setInterval(() => {
    if (isRunning(handle)) return;
    clearInterval(timer);
    removeStrayGroups(handle.instanceId);
    onExit();
  }, EXIT_POLL_MS);
  timer.unref();
}

/**
 * A one-off command in an image (a docker service's pre-deploy command), in the foreground: its output and exit status
 * are the caller's. Run as an instance is (cgroup, namespace, filter, user); removed whatever happens.
 */
export async function runContainerJob(
  deps: ContainerDeps,
  job: ContainerJobSpec,
  at: { attached: Attachment | undefined; groupDirs: string[]; dir: string },
): Promise<RunResult> {
  const storage = storageOf(job.storageDir);
  const name = `slw-job-${randomBytes(6).toString('hex')}`;
  const envFile = path.join(at.dir, `${name}.env`);
  const secretsPath = path.join(at.dir, `${name}.secrets`);
  try {
    const secretsDir = writeSecretFiles(secretsPath, job.secretFiles, deps.runAs);
    const c = await containerRun(deps, { ...job, name, envFile, secretsDir, labels: { 'slipway.job': name } }, at);
    return await run(podman.runCommand(deps.engine.setup, storage, c, 'foreground'), {
      timeoutMs: job.timeoutMs,
      signal: job.signal,
      onOutput: job.onOutput,
      maxOutputBytes: 4 * 1024 * 1024,
    });
  } finally {
    rmSync(envFile, { force: true });
    await run(podman.removeContainersCommand(deps.engine.setup, storage, [name]), { timeoutMs: CALL_TIMEOUT_MS });
    rmSync(secretsPath, { recursive: true, force: true });
  }
}
