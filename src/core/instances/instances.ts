import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { listens } from '../../model/services.js';
import path from 'node:path';
import {
  CONTAINER_STATUS_DIR,
  SECRET_FILES_SUBDIR,
  type InstanceHandle,
  type InstanceSpec,
  type Runtime,
} from '../../runtime/types.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { InstanceRepo, InstanceRow } from '../../store/repos/instances.js';
import type { Repos } from '../../store/repos/index.js';
import type { Events } from '../events.js';
import type { SecretFile } from '../secret-files.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { PLAN_LIMITS, type Plan } from '../../model/services.js';
import type { Layout } from '../service-state/layout.js';
import type { Lifecycle } from '../service-state/lifecycle.js';
import type { Logger } from '../../lib/logger.js';
import { fileTail } from '../../lib/file-tail.js';
import { readSmallFile } from '../../lib/paths.js';
import { masked, outputTail, secretValues } from '../service-state/output-tail.js';
import { HINT_SCAN_CHARS, outputHint } from '../service-state/output-hints.js';

/** What an instance runs: the deploy's artifact and start command, with the env built for it. */
export interface Release {
  service: ServiceRow;
  deploy: DeployRow;
  artifactDir: string;
  startCommand: string;
  /** A container's image, which instances run instead of startCommand in artifactDir (docs/containers.md). */
  container?: { storageDir: string; image: string; command?: string };
  /** The full environment for one instance (platform + service variables). */
  env(instance: { id: string; port?: number }): Promise<Record<string, string>>;
  /** Its secret files (at /etc/secrets), read at each start as the env is: a change applies from the next one. */
  secretFiles(): Promise<SecretFile[]>;
  /** Its service's persistent disk, read at each start too; undefined without one. */
  disk?(): Promise<InstanceSpec['disk']>;
}

/** What runOnce runs: a cron run (the release's start command) or a one-off job (its own id, command and plan). */
export interface OneRun {
  kind: 'cron_run' | 'job';
  id?: string;
  command?: string;
  plan?: Plan;
  /** Runs the moment the process exits while this Slipway runs it (its end is seen at once, not at the next poll). */
  onExit?(): void;
}
export interface RunningOnce {
  row: InstanceRow;
  exitCodeFile: string;
  instanceDir: string;
}

/**
 * The exit status a run wrote (runOnce); undefined when it was killed before it could. Its status dir is writable by
 * the run, which may have put a link, a FIFO or a huge file there: read only as a small regular file.
 */
export function exitCodeOf(run: Pick<RunningOnce, 'exitCodeFile'>): number | undefined {
  const text = readSmallFile(run.exitCodeFile, 16)?.trim();
  const code = text ? Number(text) : NaN;
  return Number.isInteger(code) ? code : undefined;
}

const handleOf = (row: InstanceRow) => ({ pid: row.pid ?? 0, startTime: row.startTime ?? '' });
/** Every process of a workspace is on its private network, where other services reach it by its slug (Render's internal hostname). */
const networkOf = (service: ServiceRow) => ({ workspaceId: service.workspaceId, hostnames: [service.slug] });
const HEALTH_TIMEOUT_CAP_MS = 10 * 60_000;

/** Starts, health-checks and stops the processes of a deploy (docs/architecture.md, "Deploys"). */
interface InstancesDeps {
  repo: InstanceRepo;
  runtime: Runtime;
  layout: Layout;
  healthTimeoutMs: number;
  /** Told as soon as a process is spawned (the log collector picks up its output at once). */
  onSpawned?(): void;
  /** Told the moment a process this Slipway started exits (the router drops it before anything could take its place). */
  onExited?(instanceId: string): void;
  /** Told when an instance answered on another port than its PORT, and is routed there (Render's port detection). */
  onPortDetected?(
    service: ServiceRow,
    deployId: string,
    detected: { instanceId: string; port: number; expected: number },
  ): Promise<void>;
}

/**
 * A start failure's reason ends with the app's own last lines (its stderr's, else its stdout's; secrets masked) and
 * where the whole log is: "exited before port 10000 became healthy" alone does not say why.
 */
function withOutput(
  err: unknown,
  handle: Pick<InstanceHandle, 'stdoutPath' | 'stderrPath'>,
  env: Record<string, string>,
  serviceId: string,
  instanceId: string,
): unknown {
  if (!(err instanceof Error)) return err;
  const secrets = secretValues(env);
  const [stderr, stdout] = [fileTail(handle.stderrPath), fileTail(handle.stdoutPath)];
  const tail = outputTail(stderr, secrets) || outputTail(stdout, secrets);
  const where = `the whole log: GET /v1/logs?resource=${serviceId}&instance=${instanceId}`;
  // Looked for further back than the tail shown: a stack trace buries "Cannot find module" a dozen lines up.
  const hint = outputHint(
    masked(`${stdout.slice(-HINT_SCAN_CHARS)}\n${stderr.slice(-HINT_SCAN_CHARS)}`, secrets),
    'run',
  );
  err.message =
    `${err.message}${hint ? ` (${hint})` : ''}. ` +
    (tail ? `The app's last output:\n${tail}\n(${where})` : `The app printed nothing (${where})`);
  return err;
}

export function createInstances(deps: InstancesDeps) {
  const { repo, runtime, layout } = deps;
  /** A stopped instance's secret files leave the disk with it (the next start writes them afresh). */
  const dropSecrets = (row: Pick<InstanceRow, 'serviceId' | 'id'>) =>
    rmSync(path.join(layout.instanceDir(row.serviceId, row.id), SECRET_FILES_SUBDIR), { recursive: true, force: true });

  async function startOne(release: Release, signal?: AbortSignal, existing?: InstanceRow): Promise<InstanceRow> {
    const { service, deploy } = release;
    const details = service.details;
    const id = existing?.id ?? `${service.id}-${randomBytes(4).toString('hex').slice(0, 5)}`;
    const port = listens(service.type) ? await runtime.instancePort() : undefined;
    const instanceDir = layout.instanceDir(service.id, id);
    mkdirSync(path.join(instanceDir, 'tmp'), { recursive: true });
    const row = existing
      ? { ...existing, port: port ?? null, status: 'starting' as const }
      : await repo.insert({ id, serviceId: service.id, deployId: deploy.id, status: 'starting', port: port ?? null });
    let handle: InstanceHandle | undefined;
    const env = await release.env({ id, port });
    const disk = await release.disk?.();
    try {
      handle = await runtime.start({
        instanceId: id,
        serviceId: service.id,
        deployId: deploy.id,
        instanceDir,
        command: release.startCommand,
        env,
        secretFiles: await release.secretFiles(),
        sandbox: {
          appDir: release.artifactDir,
          workDir: service.rootDir,
          writableDirs: [],
          scratchDirs: [path.join(instanceDir, 'tmp')],
        },
        limits: PLAN_LIMITS[details.plan],
        network: networkOf(service),
        ...(release.container ? { container: release.container } : {}),
        ...(disk ? { disk } : {}),
        onExit: () => deps.onExited?.(id),
      });
      await repo.update(id, {
        pid: handle.pid,
        startTime: handle.startTime,
        port: port ?? null,
        startedAt: handle.startedAt,
        status: 'starting',
      });
      deps.onSpawned?.();
      let healthyPort = port;
      if (port !== undefined) {
        const timeoutMs = Math.min(deps.healthTimeoutMs, HEALTH_TIMEOUT_CAP_MS);
        ({ port: healthyPort } = await runtime.waitHealthy({
          handle,
          host: handle.address,
          port,
          path: service.type === 'web_service' ? details.healthCheckPath || undefined : undefined,
          timeoutMs,
          signal,
        }));
        if (healthyPort !== port)
          await deps.onPortDetected?.(service, deploy.id, { instanceId: id, port: healthyPort, expected: port });
      } else {
        // A worker has no port: being alive a moment after start is its health.
        await new Promise((r) => setTimeout(r, 1000));
        if (!runtime.isAlive(handle)) throw new Error('the process exited right after starting');
      }
      runtime.settle?.(handle); // up: from now on within its plan's CPU
      // The port it answered on is where the router sends its traffic (live-route.ts reads it from the row).
      await repo.update(id, { status: 'running', port: healthyPort ?? null });
      return { ...row, pid: handle.pid, startTime: handle.startTime, port: healthyPort ?? null, status: 'running' };
    } catch (err) {
      // Read before stop(), which removes the instance's cgroup and with it the kernel's count of OOM kills.
      if (handle && err instanceof Error && runtime.oomKilled?.(id)) {
        const { memoryMb } = PLAN_LIMITS[details.plan];
        err.message = `${err.message} (it ran out of memory: the kernel killed it at its plan's limit of ${memoryMb} MiB; choose a larger plan, serviceDetails.plan)`;
      }
      if (handle) await runtime.stop(handle, 1000);
      await runtime.release(id);
      dropSecrets(row);
      await repo.update(id, { status: 'failed', stoppedAt: new Date() });
      throw handle && !signal?.aborted ? withOutput(err, handle, env, service.id, id) : err;
    }
  }

  return {
    /** Starts `count` instances and waits until all are healthy; on failure none is left running. */
    async start(release: Release, count: number, signal?: AbortSignal): Promise<InstanceRow[]> {
      const results = await Promise.allSettled(Array.from({ length: count }, () => startOne(release, signal)));
      const started = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) {
        await this.stop(started, 1000);
        throw failed.reason;
      }
      return started;
    },
    /**
     * One run of a command to its end (a cron run, a one-off job): started like an instance, without a port or health
     * check, from the release's start command unless `run.command` replaces it, on the service's plan unless `run.plan`
     * does. Its exit status is written to a file in the instance dir, since the process may outlive this Slipway.
     */
    async runOnce(release: Release, run: OneRun): Promise<RunningOnce> {
      const { service, deploy } = release;
      const id = run.id ?? `${service.id}-${randomBytes(4).toString('hex').slice(0, 5)}`;
      const instanceDir = layout.instanceDir(service.id, id);
      const statusDir = path.join(instanceDir, 'status');
      mkdirSync(statusDir, { recursive: true });
      mkdirSync(path.join(instanceDir, 'tmp'), { recursive: true });
      const row = await repo.insert({
        id,
        serviceId: service.id,
        deployId: deploy.id,
        status: 'starting',
        kind: run.kind,
        plan: run.plan ?? null,
      });
      const exitCodeFile = path.join(statusDir, 'exit-code');
      try {
        const { container } = release;
        const given = run.command ?? release.startCommand;
        // The image's own CMD cannot be wrapped to record its exit status: a run in an image needs a command.
        if (container && !given) throw new Error("a run in the service's image needs a command (dockerCommand)");
        // A subshell, so that an `exit` or `exec` in the command still lets the status be written.
        const command = `(\n${given}\n)\necho $? > "$SLIPWAY_RUN_STATUS_DIR/exit-code"`;
        const handle = await runtime.start({
          instanceId: id,
          serviceId: service.id,
          deployId: deploy.id,
          instanceDir,
          command,
          env: { ...(await release.env({ id })), SLIPWAY_RUN_STATUS_DIR: container ? CONTAINER_STATUS_DIR : statusDir },
          // In a container service's image (a job, a cron run), as its instances run: its status dir bound in.
          ...(container ? { container: { ...container, command, statusDir } } : {}),
          secretFiles: await release.secretFiles(),
          sandbox: {
            appDir: release.artifactDir,
            workDir: service.rootDir,
            writableDirs: [statusDir],
            scratchDirs: [path.join(instanceDir, 'tmp')],
          },
          limits: PLAN_LIMITS[run.plan ?? service.details.plan],
          network: networkOf(service),
          ...(run.onExit ? { onExit: run.onExit } : {}),
        });
        const started = { pid: handle.pid, startTime: handle.startTime, startedAt: handle.startedAt };
        await repo.update(id, { ...started, status: 'running' });
        deps.onSpawned?.();
        return { row: { ...row, ...started, status: 'running' }, exitCodeFile, instanceDir };
      } catch (err) {
        await runtime.release(id);
        dropSecrets(row);
        await repo.update(id, { status: 'failed', stoppedAt: new Date() });
        throw err;
      }
    },
    /** Replaces one crashed instance in place (same id, new process). */
    restart: (release: Release, row: InstanceRow) => startOne(release, undefined, row),
    /** SIGTERM, then SIGKILL after `graceMs`, for each instance in parallel. */
    async stop(rows: InstanceRow[], graceMs: number): Promise<void> {
      await Promise.all(
        rows.map(async (row) => {
          if (row.pid) await runtime.stop(handleOf(row), graceMs);
          await runtime.release(row.id);
          dropSecrets(row);
          await repo.update(row.id, { status: 'stopped', stoppedAt: new Date() });
        }),
      );
    },
    isAlive: (row: InstanceRow) => !!row.pid && runtime.isAlive(handleOf(row)),
    /** Whether the runtime saw the exited instance killed for going over its memory limit (told once). */
    oomKilled: (row: InstanceRow) => runtime.oomKilled?.(row.id) ?? false,
    /** Starting or running; one-off jobs' processes only with `jobs` (InstanceRepo.active). */
    active: (filter: { serviceId?: string; deployId?: string; jobs?: boolean } = {}) => repo.active(filter),
    get: (id: string) => repo.get(id),
    async markFailed(row: InstanceRow) {
      await runtime.release(row.id);
      dropSecrets(row);
      await repo.update(row.id, { status: 'failed', stoppedAt: new Date() });
    },
    bumpRestarts: (row: InstanceRow) => repo.update(row.id, { restarts: row.restarts + 1 }),
  };
}
export type Instances = ReturnType<typeof createInstances>;

/** What the engine's background loops (crash supervisor, cron runner) are given. */
export interface LoopDeps {
  repos: Pick<Repos, 'services' | 'deploys'>;
  instances: Instances;
  events: Events;
  log: Logger;
  releaseOf(service: ServiceRow, deploy: DeployRow): Release;
  /** Services with a live deploy; [] (logged) while the store is unreachable. */
  runnable(): Promise<ServiceRow[]>;
  /** Services being deleted are left alone. */
  lifecycle: Pick<Lifecycle, 'isRemoving'>;
  intervalMs: number;
}
