import path from 'node:path';
import type { Disks } from '../core/disks.js';
import type { Config } from './config.js';
import type { AuditLog } from '../core/audit.js';
import { createBlueprints } from '../core/blueprints/blueprints.js';
import { createBlueprintParser } from '../core/blueprints/parse.js';
import type { SyncDeps } from '../core/blueprints/sync.js';
import type { Datastores } from '../core/datastores/datastores.js';
import type { Deploys } from '../core/deploys/deploys.js';
import type { DeployEngine } from '../core/deploys/engine.js';
import type { EnvGroups } from '../core/env-groups.js';
import type { Events } from '../core/events.js';
import type { Projects } from '../core/projects.js';
import type { EnvVars } from '../core/services/env-vars.js';
import type { Services } from '../core/services/services.js';
import type { ArchiveLimits } from '../lib/archive.js';
import type { Logger } from '../lib/logger.js';
import type { Repos } from '../store/repos/index.js';
import type { Domains } from '../core/domains/domains.js';
import type { Git } from '../core/builds/git.js';
import type { Runtime } from '../runtime/types.js';

const first = <T>(rows: T[]) => rows[0];
/** How long a sync waits for its new datastores before deploying anyway (the deploy then says what is missing). */
const CREATE_WAIT_MS = 180_000;

/** Blueprints over the core services: the sync reaches every resource through core, as the API does. */
export function wireBlueprints(deps: {
  config: Config;
  repos: Pick<
    Repos,
    'blueprints' | 'services' | 'envGroups' | 'datastores' | 'projects' | 'deploys' | 'registryCredentials'
  >;
  services: Services;
  envVars: EnvVars;
  envGroups: EnvGroups;
  datastores: Datastores;
  projects: Projects;
  deploys: Deploys;
  engine: Pick<DeployEngine, 'trigger'>;
  events: Events;
  audit: AuditLog;
  log: Logger;
  archive: ArchiveLimits;
  git: Git;
  runtime: Pick<Runtime, 'mountBuildDisk' | 'tools'>;
  checkRepo: (repo: string) => string;
  gitToken?: (owner: { workspaceId: string; repo: string }) => Promise<string | undefined>;
  /** A service's custom domains (a file's `domains`). */
  domains: Pick<Domains, 'ensure'>;
  /** A service's persistent disk (a file's `disk`). */
  disks: Pick<Disks, 'ensure'>;
}) {
  const { repos } = deps;
  const one = { limit: 1 };
  const sync: SyncDeps = {
    find: {
      envGroup: async (ws, name) => first(await repos.envGroups.list({ workspaceIds: [ws], name: [name], ...one })),
      datastore: async (ws, kind, name) =>
        first(await repos.datastores.list({ kind, workspaceIds: [ws], name: [name], ...one })),
      async environments(ws, name, names) {
        let project = first(await repos.projects.listProjects({ workspaceIds: [ws], name: [name], ...one }));
        project ??= await deps.projects.createProject(ws, { name, environments: names.map((n) => ({ name: n })) });
        const ids = new Map<string, string>();
        const have = await repos.projects.listEnvironments({ projectIds: [project.id], limit: 1000 });
        for (const env of have) ids.set(env.name, env.id);
        for (const n of names)
          if (!ids.has(n)) ids.set(n, (await deps.projects.createEnvironment(project, { name: n })).id);
        return { id: project.id, ids };
      },
    },
    envGroups: {
      create: (ws, input) => deps.envGroups.create(ws, input),
      vars: async (group) => (await deps.envGroups.view(group, true)).envVars, // the sync compares values
      putVar: (group, input) => deps.envGroups.putVar(group, input),
    },
    datastores: {
      createPostgres: (ws, input) => deps.datastores.createPostgres(ws, input as never),
      createKeyValue: (ws, input) => deps.datastores.createKeyValue(ws, input as never),
      update: (row, patch) => deps.datastores.update(row, patch),
      async created(ids) {
        const until = Date.now() + CREATE_WAIT_MS;
        for (const id of ids)
          while (Date.now() < until && (await repos.datastores.get(id))?.status === 'creating')
            await new Promise((r) => setTimeout(r, 250));
      },
    },
    findService: async (ws, name) => first(await repos.services.list({ workspaceIds: [ws], name: [name], ...one })),
    services: {
      create: async (ws, input) => (await deps.services.create(ws, input, { deploy: false })).service,
      update: (service, patch) => deps.services.update(service, patch),
    },
    serviceVars: {
      list: (id) => deps.envVars.list(id),
      put: (service, input) => deps.envVars.put(service, input),
    },
    groupsOf: (id) => repos.envGroups.groupsOf(id),
    link: (group, id) => deps.envGroups.link(group, id),
    hasDeploys: async (service) => (await repos.deploys.list({ serviceId: service.id, limit: 1 })).length > 0,
    latestSourceSha: async (id) => (await repos.deploys.latestSource(id))?.sha256,
    registryCredentialId: async (ws, name) =>
      first(await repos.registryCredentials.list({ workspaceIds: [ws], name: [name], ...one }))?.id,
    addDomains: (service, names) => deps.domains.ensure(service, names),
    placeDisk: (service, disk) => deps.disks.ensure(service, disk),
    deploy: async (service, archive) =>
      archive
        ? (await deps.deploys.deployArchive(service, archive)).id
        : (await deps.engine.trigger(service, { trigger: 'api' })).id,
  };
  return createBlueprints({
    repo: repos.blueprints,
    sync,
    serviceType: async (id) => (await repos.services.get(id))?.type,
    events: deps.events,
    audit: deps.audit,
    log: deps.log,
    checkRepo: deps.checkRepo,
    gitToken: deps.gitToken,
    archiveDir: path.join(deps.config.dataDir, 'blueprints'),
    limits: { maxUploadBytes: deps.config.maxUploadBytes, archive: deps.archive },
    repos: {
      git: deps.git,
      mountDisk: (disk) => deps.runtime.mountBuildDisk(disk),
      diskMb: deps.config.builds.diskMb,
    },
    parser: createBlueprintParser({
      timeoutMs: deps.config.blueprintParseMs,
      memoryMb: deps.config.blueprintParseMemoryMb,
    }),
    versionTools: deps.runtime.tools,
    heartbeatMs: Math.max(100, Math.floor(deps.config.blueprintSyncStaleMs / 3)),
    staleMs: deps.config.blueprintSyncStaleMs,
  });
}
