import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Limits } from '../../model/limits.js';
import type { BuildPlan } from '../../model/enums.js';
import type { RunResult } from '../../lib/exec.js';
import type { Containers, RegistryAuth } from '../../runtime/types.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { DeployToolchain } from '../../store/schema/index.js';
import { realPathInside } from '../../lib/paths.js';
import { commandFailure, DeployFailure } from '../service-state/failures.js';
import { outputTail, secretValues } from '../service-state/output-tail.js';
import type { BuildLog } from './build-step.js';

/** What building or pulling a container image needs (docs/containers.md). */
export interface ImageDeps {
  containers: Containers | undefined;
  /** Why there is no engine, when there is none. */
  noEngine?: string;
  storageOf(serviceId: string): string;
  buildPlans: Record<BuildPlan, Limits>;
  timeoutMs: number;
  buildEnv(service: ServiceRow, deploy: DeployRow): Promise<Record<string, string>>;
  buildLog?: BuildLog;
  /** A registry credential of the workspace, decrypted for one pull (core/registry-credentials.ts). */
  credential?(workspaceId: string, id: string, imageHost: string): Promise<RegistryAuth | undefined>;
}

/** The tag a deploy's image has in its service's storage: rollback restarts exactly it. */
export const imageTag = (serviceId: string, deployId: string) => `localhost/slipway/${serviceId}:${deployId}`;

/** The registry host of an image reference (Docker Hub's when it names none). */
export function imageHost(ref: string): string {
  const first = ref.split('/')[0]!;
  return ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')
    ? first
    : 'docker.io';
}

function engineOf(deps: ImageDeps): Containers {
  if (deps.containers) return deps.containers;
  throw new DeployFailure('build_failed', `no container engine on this machine: ${deps.noEngine ?? 'none installed'}`);
}

/** A path of the service's settings, inside the source (symlinks resolved), or the build fails saying which. */
function inside(root: string, rel: string, what: string): string {
  const full = path.resolve(root, rel);
  const real = realPathInside(root, full);
  if (real === 'missing') throw new DeployFailure('build_failed', `${what} is not in the source`);
  if (real === 'outside') throw new DeployFailure('build_failed', `${what} leads outside the source (a symlink?)`);
  return full;
}

/** The failure of a build or pull, with its output's tail (secrets masked). */
function failure(what: string, result: RunResult, limits: Limits, timeoutMs: number, env: Record<string, string>) {
  const tail = outputTail(result.output.slice(-8000), secretValues(env));
  return commandFailure('build_failed', what, result, { memoryMb: limits.memoryMb, timeoutMs }, tail);
}

/**
 * A docker service's build: its Dockerfile (envSpecificDetails.dockerfilePath, default ./Dockerfile, relative to the
 * root dir as on Render) in its context, env vars as build args, into the service's storage where the last builds'
 * layers are the cache. Returns what the deploy records: the image, and dockerCommand as its start command.
 */
export async function buildImage(
  deps: ImageDeps,
  service: ServiceRow,
  deploy: DeployRow,
  repoRoot: string,
  signal: AbortSignal,
): Promise<{ startCommand?: string; toolchain: DeployToolchain }> {
  const containers = engineOf(deps);
  const docker = service.details.docker ?? { dockerfilePath: '', dockerContext: '', dockerCommand: '' };
  const root = inside(repoRoot, service.rootDir || '.', `rootDir "${service.rootDir}"`);
  const dockerfilePath = docker.dockerfilePath || './Dockerfile';
  const dockerfile = inside(root, dockerfilePath, `dockerfilePath "${dockerfilePath}"`);
  if (!existsSync(dockerfile)) throw new DeployFailure('build_failed', `no Dockerfile at ${dockerfilePath}`);
  const contextDir = inside(root, docker.dockerContext || '.', `dockerContext "${docker.dockerContext}"`);
  const limits = deps.buildPlans[service.details.buildPlan ?? 'starter'];
  const env = await deps.buildEnv(service, deploy);
  const tag = imageTag(service.id, deploy.id);
  const log = deps.buildLog?.(service, deploy.id);
  const auth = docker.registryCredentialId
    ? await deps.credential?.(service.workspaceId, docker.registryCredentialId, '')
    : undefined;
  // Another workspace's id, or a deleted one: said, not built without it.
  if (docker.registryCredentialId && !auth)
    throw new DeployFailure('build_failed', `registry credential ${docker.registryCredentialId} was not found`);
  try {
    log?.write(`==> Building the image from ${dockerfilePath} (${containers.engine})\n`);
    const result = await containers.build({
      storageDir: deps.storageOf(service.id),
      contextDir,
      dockerfile,
      tag,
      buildArgs: env,
      limits,
      timeoutMs: deps.timeoutMs,
      signal,
      onOutput: log?.write,
      auth,
      noCache: deploy.clearCache,
    });
    const failed = failure('the image build', result, limits, deps.timeoutMs, env);
    if (failed) throw failed;
    if (!result.image) throw new DeployFailure('build_failed', 'the image build left no image');
    return {
      ...(docker.dockerCommand ? { startCommand: docker.dockerCommand } : {}),
      toolchain: { image: { tag, id: result.image.id } },
    };
  } finally {
    log?.end();
  }
}

/**
 * An image service's deploy: pulls image.imagePath (with its registry credential) into the service's storage and
 * tags it as this deploy's; the digest the reference resolved to is recorded, so a rollback runs exactly that image.
 */
export async function pullImage(
  deps: ImageDeps,
  service: ServiceRow,
  deploy: DeployRow,
  signal: AbortSignal,
): Promise<{ toolchain: DeployToolchain }> {
  const containers = engineOf(deps);
  const image = service.details.image;
  if (!image) throw new DeployFailure('build_failed', 'an image service needs image.imagePath');
  const host = imageHost(image.imagePath);
  const auth = image.registryCredentialId
    ? await deps.credential?.(service.workspaceId, image.registryCredentialId, host)
    : undefined;
  if (image.registryCredentialId && !auth)
    throw new DeployFailure('build_failed', `registry credential ${image.registryCredentialId} was not found`);
  const log = deps.buildLog?.(service, deploy.id);
  try {
    log?.write(`==> Pulling ${image.imagePath}${auth ? ` as ${auth.username}` : ''}\n`);
    const storageDir = deps.storageOf(service.id);
    const tag = imageTag(service.id, deploy.id);
    const result = await containers.pull({
      storageDir,
      ref: image.imagePath,
      tag,
      auth,
      timeoutMs: deps.timeoutMs,
      signal,
    });
    log?.write(result.output);
    const limits = deps.buildPlans.starter;
    const failed = failure(`pulling ${image.imagePath}`, result, limits, deps.timeoutMs, {});
    if (failed) throw failed;
    if (!result.image) throw new DeployFailure('build_failed', `pulling ${image.imagePath} left no image`);
    log?.write(`==> ${image.imagePath} is ${result.image.digest}\n`);
    const { id, digest } = result.image;
    return { toolchain: { image: { tag, id, ref: image.imagePath, digest } } };
  } finally {
    log?.end();
  }
}
