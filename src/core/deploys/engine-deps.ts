import type { Runtime } from '../../runtime/types.js';
import type { DeployRow, DeployStatus } from '../../store/repos/deploys.js';
import type { Repos, Transact } from '../../store/repos/index.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { RouteTable } from '../../router/route-table.js';
import type { Logger } from '../../lib/logger.js';
import type { Events } from '../events.js';
import type { SecretFile } from '../secret-files.js';
import type { AppUrls, EnvLayer } from '../service-state/env.js';
import type { Layout } from '../service-state/layout.js';
import type { Lifecycle } from '../service-state/lifecycle.js';
import type { BuildCache } from '../builds/build-cache.js';
import type { ImageDeps } from '../builds/images.js';
import type { BuildLog } from '../builds/build-step.js';
import type { PipelineLimits } from '../builds/pipeline.js';
import type { Git } from '../builds/git.js';
import type { CronDeps } from './cron.js';

/** What the deploy engine is given (app/steps/deploying.ts wires it). */
export interface EngineDeps {
  repos: Pick<Repos, 'services' | 'deploys' | 'instances' | 'jobs' | 'disks'>;
  transact: Transact;
  runtime: Runtime;
  layout: Layout;
  routeTable: RouteTable;
  /** The services' lifecycle state, shared with service management (core/services/services.ts). */
  lifecycle: Lifecycle;
  events: Events;
  /** The service's variables above the platform's, in precedence order. */
  layersOf(serviceId: string): Promise<EnvLayer[]>;
  /** The service's secret files as its instances see them (core/secret-files.ts resolved). */
  secretFilesOf(serviceId: string): Promise<SecretFile[]>;
  urls: AppUrls;
  limits: PipelineLimits & {
    /** Builds at once (config-builds.ts): in all, per workspace, and their memory together. */
    buildQueue: { concurrency: number; perWorkspace: number; memoryMb: number };
    healthTimeoutMs: number;
    keepArtifacts: number;
    serviceDiskMb: number;
    crashCheckMs: number;
    crashBackoffMs: number;
  };
  log: Logger;
  /** Build and pre-deploy output lines (the log store). */
  buildLog?: BuildLog;
  /** The services' dependency caches; none: every build installs from nothing. */
  buildCache?: BuildCache;
  /** Told of every deploy that reaches a final status (Prometheus counters). */
  onDeployEnded?(status: DeployStatus, deploy: DeployRow): void;
  /** Clones and polls, sandboxed (git.ts). */
  git: Git;
  /** A token to clone the service's repo with (core/github), when one applies. */
  gitToken?: (service: ServiceRow) => Promise<string | undefined>;
  /** A workspace's registry credential for a pull from `imageHost` (core/registry-credentials.ts credentialFor). */
  registryCredential?: ImageDeps['credential'];
  /** Told of every build that ran, succeeded or not (the usage meter's build-seconds). */
  onBuildEnded?(service: ServiceRow, deployId: string, startedAt: Date, endedAt: Date): Promise<void> | void;
  /** Runs when a removed service's processes have stopped, before its rows go (the usage meter's last pass). */
  onRemoved?(): Promise<void>;
  /** Told as soon as an instance's process is spawned (the log collector). */
  onInstanceSpawned?(): void;
  collectOutput?: CronDeps['collectOutput'];
}
