import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { run, type Command, type RunResult } from '../../lib/exec.js';
import type { Containers, ImageBuildSpec, ImageInfo, ImagePullSpec, RegistryAuth } from '../types.js';
import * as podman from './podman.js';

/** What a machine without an engine is told (`/status`, and the 400 a docker or image service gets). */
export const INSTALL_HINT = 'apt-get install podman runc (Podman 4.3 from Debian; docs/containers.md)';

const PROGRAMS = ['/usr/bin/podman', '/usr/sbin/runc', '/usr/bin/runc'];
const INIT = '/usr/libexec/podman/catatonit';
const MAX_OUTPUT = 4 * 1024 * 1024;

export interface EngineOptions {
  /** Slipway's own dir for the engine's files (registries.conf, auth files); the storage dirs are the services'. */
  stateDir: string;
  /** Registries reached over plain HTTP or with a certificate no CA signed (SLIPWAY_CONTAINER_INSECURE_REGISTRIES). */
  insecureRegistries: string[];
}

/** Short names resolve on Docker Hub, as on Render; the operator's insecure registries are marked so. */
export function registriesConf(insecure: string[]): string {
  return [
    'unqualified-search-registries = ["docker.io"]',
    'short-name-mode = "permissive"',
    ...insecure.map((location) => `\n[[registry]]\nlocation = ${JSON.stringify(location)}\ninsecure = true`),
  ].join('\n');
}

/**
 * No sysctls of Podman's own: it sets `net.ipv4.ping_group_range` in a container's network namespace by default, which
 * a container in a user namespace of its own may not do in the namespace Slipway made (runc: permission denied).
 */
export const CONTAINERS_CONF = '[containers]\ndefault_sysctls = []\n';

/**
 * Podman, when this machine has it and runc (docs/containers.md, "The engine"); else why not. Each service's images
 * live in a storage of its own under its dir, so one service's layer cache is never another's.
 */
export async function detectPodman(
  options: EngineOptions,
): Promise<{ engine: PodmanEngine; setup: podman.PodmanSetup } | string> {
  const [podmanPath, ...runcs] = PROGRAMS;
  const runc = runcs.find((file) => existsSync(file));
  if (!existsSync(podmanPath!) || !runc) return `no container engine (Podman and runc): ${INSTALL_HINT}`;
  const version = await run(podman.versionCommand(podmanPath!), { timeoutMs: 10_000 });
  const match = /version (\d+\.\d+\.\d+)/.exec(version.output);
  if (version.exitCode !== 0 || !match) return `podman --version failed: ${version.output.trim().slice(0, 200)}`;
  mkdirSync(options.stateDir, { recursive: true, mode: 0o700 });
  const confFile = path.join(options.stateDir, 'registries.conf');
  writeFileSync(confFile, registriesConf(options.insecureRegistries) + '\n');
  const containersConf = path.join(options.stateDir, 'containers.conf');
  writeFileSync(containersConf, CONTAINERS_CONF);
  const setup: podman.PodmanSetup = {
    podman: podmanPath!,
    ociRuntime: runc,
    registriesConf: confFile,
    containersConf,
    init: existsSync(INIT),
    nofile: Math.min(65536, hardLimit('Max open files') ?? 1024),
    // 32,768: what runc could set here (65,536 failed below this machine's hard limit of 96,365).
    nproc: Math.min(32768, hardLimit('Max processes') ?? 4096),
    userNamespaces: userNamespacesAllowed(),
  };
  return { engine: createEngine(setup, match[1]!), setup };
}

/** Whether the kernel lets new user namespaces be made (a root image's container gets one: docs/containers.md). */
function userNamespacesAllowed(): boolean {
  try {
    return Number(readFileSync('/proc/sys/user/max_user_namespaces', 'utf8').trim()) > 0;
  } catch {
    return false;
  }
}

/** One of this process's hard limits (/proc/self/limits), which a container's may not exceed. */
function hardLimit(name: string): number | undefined {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(name));
  const hard = line?.slice(name.length).trim().split(/\s+/)[1];
  return hard === 'unlimited' ? Infinity : hard ? Number(hard) : undefined;
}

/** A service's storage: under its dir (removed with it); run-time state on /run, keyed by that dir. */
export function storageOf(storageDir: string): podman.Storage {
  const key = createHash('sha256').update(path.resolve(storageDir)).digest('hex').slice(0, 16);
  return { root: storageDir, runRoot: path.join('/run/slipway/containers', key) };
}

/** An auth file for one call (0600, in the storage's run dir), removed after it; the token never on a command line. */
async function withAuth<T>(
  storage: podman.Storage,
  auth: RegistryAuth | undefined,
  fn: (file?: string) => Promise<T>,
): Promise<T> {
  if (!auth) return fn();
  mkdirSync(storage.runRoot, { recursive: true, mode: 0o700 });
  const file = path.join(storage.runRoot, `auth-${process.pid}-${Date.now()}.json`);
  const encoded = Buffer.from(`${auth.username}:${auth.password}`).toString('base64');
  writeFileSync(file, JSON.stringify({ auths: { [auth.host]: { auth: encoded } } }), { mode: 0o600 });
  try {
    return await fn(file);
  } finally {
    rmSync(file, { force: true });
  }
}

/** Where a build or a pull reaches the network: its build namespace (RUN steps share it), entered by `wrap`. */
export interface Place {
  netnsPath: string | undefined;
  wrap?(cmd: Command): Command;
}

/** Containers, with each build and pull given its place by the runtime. */
export interface PodmanEngine extends Omit<Containers, 'build' | 'pull' | 'run' | 'releaseStorage'> {
  setup: podman.PodmanSetup;
  build(spec: ImageBuildSpec, place: Place): ReturnType<Containers['build']>;
  pull(spec: ImagePullSpec, place: Place): ReturnType<Containers['pull']>;
}

function createEngine(setup: podman.PodmanSetup, version: string): PodmanEngine {
  const inspect = async (storage: podman.Storage, ref: string): Promise<ImageInfo | undefined> => {
    const result = await run(podman.inspectImageCommand(setup, storage, ref), { timeoutMs: 30_000 });
    if (result.exitCode !== 0) return undefined;
    const [raw] = JSON.parse(result.output) as {
      Id: string;
      Digest: string;
      Config?: { User?: string; ExposedPorts?: Record<string, unknown>; Volumes?: Record<string, unknown> };
    }[];
    if (!raw) return undefined;
    const ports = Object.keys(raw.Config?.ExposedPorts ?? {})
      .map((p) => Number(p.split('/')[0]))
      .filter((p) => Number.isInteger(p) && p > 0);
    const volumes = Object.keys(raw.Config?.Volumes ?? {});
    return { id: raw.Id, digest: raw.Digest, user: raw.Config?.User ?? '', ports, volumes };
  };
  const inNamespace = (cmd: Command, wrap?: (cmd: Command) => Command) => (wrap ? wrap(cmd) : cmd);
  return {
    engine: `podman ${version}`,
    setup,
    async build(spec, place) {
      const storage = storageOf(spec.storageDir);
      return withAuth(storage, spec.auth, async (authFile) => {
        const cmd = podman.buildCommand(setup, storage, { ...spec, netnsPath: place.netnsPath, authFile });
        const result: RunResult = await run(inNamespace(cmd, place.wrap), {
          timeoutMs: spec.timeoutMs,
          signal: spec.signal,
          onOutput: spec.onOutput,
          maxOutputBytes: MAX_OUTPUT,
        });
        return { ...result, image: result.exitCode === 0 ? await inspect(storage, spec.tag) : undefined };
      });
    },
    async pull(spec, place) {
      const storage = storageOf(spec.storageDir);
      return withAuth(storage, spec.auth, async (authFile) => {
        const result = await run(inNamespace(podman.pullCommand(setup, storage, spec.ref, authFile), place.wrap), {
          timeoutMs: spec.timeoutMs,
          signal: spec.signal,
          maxOutputBytes: MAX_OUTPUT,
        });
        if (result.exitCode !== 0) return result;
        const tagged = await run(podman.tagCommand(setup, storage, spec.ref, spec.tag), { timeoutMs: 30_000 });
        if (tagged.exitCode !== 0) return tagged;
        return { ...result, image: await inspect(storage, spec.ref) };
      });
    },
    inspect: (storageDir, ref) => inspect(storageOf(storageDir), ref),
    async removeImages(storageDir, refs) {
      if (refs.length === 0 || !existsSync(storageDir)) return;
      await run(podman.removeImageCommand(setup, storageOf(storageDir), refs), { timeoutMs: 120_000 });
    },
  };
}
