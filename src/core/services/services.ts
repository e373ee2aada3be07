import { randomBytes } from 'node:crypto';
import { badRequest, conflict, notFound } from '../../lib/errors.js';
import { isUniqueViolation } from '../../store/db.js';
import type { DeployTrigger, Suspender } from '../../store/enums.js';
import { newId } from '../../lib/ids.js';
import type { Repos, Transact } from '../../store/repos/index.js';
import type { ServiceQuery, ServiceRow } from '../../store/repos/services.js';
import { gitTransport } from '../deploys/commands.js';
import type { Lifecycle } from '../deploys/lifecycle.js';
import type { Events } from '../events.js';
import { mergeDetails, type ServiceDetails, type ServiceDetailsInput, type ServiceType } from './details.js';
import type { EnvVarInput, EnvVars } from './env-vars.js';

/** What service management needs from the deploy engine. */
export interface DeployPort {
  trigger(service: ServiceRow, opts: { trigger: DeployTrigger; sourceId?: string }): Promise<{ id: string }>;
  /** Stops the service's instances (suspend): the live deploy stays live, ready to resume. */
  stopAll(service: ServiceRow): Promise<void>;
  resume(service: ServiceRow): Promise<void>;
  /** Stops everything and removes the service's files. */
  remove(service: ServiceRow): Promise<void>;
}

export interface ServiceInput {
  type: ServiceType;
  name: string;
  repo?: string;
  branch?: string;
  rootDir?: string;
  autoDeploy?: ServiceRow['autoDeploy'];
  environmentId?: string;
  envVars?: EnvVarInput[];
  serviceDetails?: ServiceDetailsInput;
}
export type ServicePatch = Partial<Omit<ServiceInput, 'type' | 'envVars' | 'environmentId'>>;

function checkRootDir(rootDir: string) {
  if (rootDir.startsWith('/') || rootDir.split('/').includes('..'))
    throw badRequest('rootDir must be a relative path inside the source');
  return rootDir.replace(/\/+$/, '');
}

function checkRepo(repo: string, protocols: string[]) {
  // Never an option (a leading "-" would be read as one).
  if (repo.startsWith('-') || /\s/.test(repo)) throw badRequest('repo must be a git URL');
  const transport = gitTransport(repo);
  if (transport === 'file' && !protocols.includes('file'))
    throw badRequest(
      'repo must be a remote git URL (https, ssh or git): local paths and file:// need SLIPWAY_GIT_ALLOW_LOCAL=1 on the server',
    );
  if (!protocols.includes(transport))
    throw badRequest(`repo: git over "${transport}" is not allowed (use ${protocols.join(', ')})`);
  return repo;
}

/**
 * Render's autoDeploy rule, for every new source a service gets (a repo at creation, an uploaded archive):
 * it deploys it when autoDeploy is `yes` and the service is not suspended.
 */
export const deploysNewSource = (service: Pick<ServiceRow, 'autoDeploy' | 'suspenders'>) =>
  service.autoDeploy === 'yes' && !service.suspenders.includes('user');

/** `my-app` -> `my-app`, or `my-app-x7k2` when taken: the host name label under the apps domain. */
async function uniqueSlug(name: string, taken: (slug: string) => Promise<boolean>) {
  const base =
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'service';
  if (!(await taken(base))) return base;
  for (;;) {
    const slug = `${base}-${randomBytes(3).toString('hex').slice(0, 4)}`;
    if (!(await taken(slug))) return slug;
  }
}

export function createServices(deps: {
  repos: Pick<Repos, 'services' | 'instances'>;
  transact: Transact;
  envVars: EnvVars;
  events: Events;
  engine: DeployPort;
  /** A service whose deletion has begun is gone for requests. */
  lifecycle: Pick<Lifecycle, 'isRemoving'>;
  /** 404 unless the environment is in the workspace (core/projects.ts). */
  assertEnvironment: (workspaceId: string, environmentId: string) => Promise<void>;
  /** The git transports a repo may use (deploys/commands.ts allowedGitProtocols). */
  gitProtocols: string[];
}) {
  const { repos, transact, envVars, events, engine } = deps;

  async function get(id: string): Promise<ServiceRow> {
    const row = await repos.services.get(id);
    if (!row || deps.lifecycle.isRemoving(id)) throw notFound('service');
    return row;
  }

  return {
    get,
    list: (q: ServiceQuery) => repos.services.list(q),
    /** The instances running now (their ids label the logs and metrics). */
    instancesOf: (service: ServiceRow) => repos.instances.active({ serviceId: service.id }),

    /** Creates the service; with a repo and autoDeploy it starts the first deploy (Render's serviceAndDeploy). */
    async create(workspaceId: string, input: ServiceInput): Promise<{ service: ServiceRow; deployId?: string }> {
      const details = mergeDetails(input.type, input.serviceDetails);
      if (input.environmentId) await deps.assertEnvironment(workspaceId, input.environmentId);
      const slug = await uniqueSlug(input.name, repos.services.slugTaken);
      const vars = await envVars.prepare(workspaceId, input.envVars ?? []);
      const service = await transact(async (tx) => {
        const row = await tx.services
          .insert({
            id: newId('service'),
            workspaceId,
            name: input.name,
            slug,
            type: input.type,
            repo: input.repo ? checkRepo(input.repo, deps.gitProtocols) : null,
            branch: input.branch ?? null,
            rootDir: checkRootDir(input.rootDir ?? ''),
            autoDeploy: input.autoDeploy ?? 'yes',
            environmentId: input.environmentId ?? null,
            details,
          })
          .catch((err: unknown) => {
            throw isUniqueViolation(err)
              ? conflict(`a service named "${input.name}" already exists in this workspace`)
              : err;
          });
        await envVars.write(row.id, vars, tx.envVars);
        return row;
      });
      await events.record({
        workspaceId,
        serviceId: service.id,
        type: 'service_created',
        details: { name: service.name, type: service.type },
      });
      if (service.repo && deploysNewSource(service))
        return { service, deployId: (await engine.trigger(service, { trigger: 'api' })).id };
      return { service };
    },

    async update(service: ServiceRow, patch: ServicePatch): Promise<ServiceRow> {
      const updated = await transact(async (tx) => {
        // Merged into the details as they are now, under the row's lock: a concurrent PATCH of another field is kept.
        const current = await tx.services.lock(service.id);
        if (!current) throw notFound('service');
        const details: ServiceDetails = mergeDetails(service.type, patch.serviceDetails, current.details);
        return tx.services.update(service.id, {
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.repo !== undefined ? { repo: patch.repo ? checkRepo(patch.repo, deps.gitProtocols) : null } : {}),
          ...(patch.branch !== undefined ? { branch: patch.branch || null } : {}),
          ...(patch.rootDir !== undefined ? { rootDir: checkRootDir(patch.rootDir) } : {}),
          ...(patch.autoDeploy !== undefined ? { autoDeploy: patch.autoDeploy } : {}),
          details,
        });
      }).catch((err: unknown) => {
        throw isUniqueViolation(err)
          ? conflict(`a service named "${patch.name}" already exists in this workspace`)
          : err;
      });
      if (!updated) throw notFound('service');
      await events.record({
        workspaceId: service.workspaceId,
        serviceId: service.id,
        type: 'service_updated',
        details: { fields: Object.keys(patch) },
      });
      return updated;
    },

    async remove(service: ServiceRow): Promise<void> {
      await engine.remove(service);
      await repos.services.delete(service.id);
      await events.record({ workspaceId: service.workspaceId, serviceId: service.id, type: 'service_deleted' });
    },

    async suspend(service: ServiceRow): Promise<ServiceRow> {
      const suspenders = [...new Set<Suspender>([...service.suspenders, 'user'])];
      const updated = await repos.services.update(service.id, { suspenders });
      if (!updated) throw notFound('service');
      await engine.stopAll(updated);
      await events.record({ workspaceId: service.workspaceId, serviceId: service.id, type: 'service_suspended' });
      return updated;
    },

    async resume(service: ServiceRow): Promise<ServiceRow> {
      if (!service.suspenders.length) return service;
      const updated = await repos.services.update(service.id, { suspenders: [] });
      if (!updated) throw notFound('service');
      await engine.resume(updated);
      await events.record({ workspaceId: service.workspaceId, serviceId: service.id, type: 'service_resumed' });
      return updated;
    },
  };
}
export type Services = ReturnType<typeof createServices>;
