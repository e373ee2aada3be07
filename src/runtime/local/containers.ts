import { readdirSync, rmdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { run, spawnDetached } from '../../lib/exec.js';
import { storageOf, type PodmanEngine } from '../containers/engine.js';
import * as podman from '../containers/podman.js';
import type { InstanceHandle, InstanceSpec } from '../types.js';
import { groupPathOf } from './cgroups.js';
import type { Attachment } from './network/index.js';
import { isRunning, readStat } from './proc.js';
import type { SandboxPolicy } from './sandbox.js';

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

/** The user it runs as: the image's own when it names one but root, else Slipway's app user (docs/containers.md). */
async function userFor(
  runAs: SandboxPolicy['runAs'],
  engine: PodmanEngine,
  spec: Required<Pick<InstanceSpec, 'container'>>,
) {
  const info = await engine.inspect(spec.container.storageDir, spec.container.image);
  if (!info) throw new Error(`image ${spec.container.image} is not in the service's storage`);
  const own = info.user.split(':')[0];
  if (own && own !== 'root' && own !== '0') return undefined;
  const user = runAs ?? { uid: 65534, gid: 65534 };
  return `${user.uid}:${user.gid}`;
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

/**
 * Starts an instance's container (docs/containers.md, "Instances"): in the namespace Slipway made, inside the
 * instance's cgroup (its limits), its output appended to the same files a native instance writes. `podman init`
 * hands conmon those files, and prints the container's name, which is cut; `start` then runs the app.
 */
export async function startContainer(
  deps: { engine: PodmanEngine; runAs: SandboxPolicy['runAs']; seccompProfile: string | undefined },
  spec: InstanceSpec & Required<Pick<InstanceSpec, 'container'>>,
  at: { attached: Attachment | undefined; groupDirs: string[]; stdoutPath: string; stderrPath: string },
): Promise<{ pid: number; startTime: string }> {
  const { engine } = deps;
  const storage = storageOf(spec.container.storageDir);
  const name = `slw-${spec.instanceId}`;
  const envFile = path.join(spec.instanceDir, 'container.env');
  const env = splitEnv(spec.env);
  writeFileSync(envFile, env.file, { mode: 0o600 });
  const { attached } = at;
  try {
    const created = await run(
      podman.createCommand(engine.setup, storage, {
        name,
        image: spec.container.image,
        command: spec.container.command,
        cgroupParent: at.groupDirs.length > 0 ? groupPathOf(spec.instanceId) : undefined,
        netnsPath: attached?.netnsPath,
        hostsFile: attached?.hostsFile,
        resolvConf: attached?.resolvConf,
        user: await userFor(deps.runAs, engine, spec),
        envFile,
        envArgs: env.args,
        limits: spec.limits,
        seccompProfile: deps.seccompProfile,
        labels: { 'slipway.instance': spec.instanceId, 'slipway.service': spec.serviceId },
      }),
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    if (created.exitCode !== 0) throw new Error(`podman create failed: ${created.output.trim().slice(-500)}`);
    const before = statSync(at.stdoutPath, { throwIfNoEntry: false })?.size ?? 0;
    const init = podman.initCommand(engine.setup, storage, name);
    const code = await new Promise<number | null>((resolve, reject) => {
      spawnDetached(init, at, (exitCode) => resolve(exitCode)).catch(reject);
    });
    if (code !== 0) throw new Error(`podman init failed (exit ${code}): see the instance's stderr`);
    truncateSync(at.stdoutPath, before); // the name init printed
    const started = await run(podman.startCommand(engine.setup, storage, name), { timeoutMs: CALL_TIMEOUT_MS });
    if (started.exitCode !== 0) throw new Error(`podman start failed: ${started.output.trim().slice(-500)}`);
    const inspected = await run(podman.pidCommand(engine.setup, storage, name), { timeoutMs: CALL_TIMEOUT_MS });
    const pid = Number(inspected.output.trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`the container exited at once: see the instance's stderr`);
    return { pid, startTime: readStat(pid)?.startTime ?? '' };
  } catch (err) {
    await run(podman.removeContainersCommand(engine.setup, storage, [name]), { timeoutMs: CALL_TIMEOUT_MS });
    throw err;
  } finally {
    rmSync(envFile, { force: true });
  }
}

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
