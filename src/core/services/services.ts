import { randomBytes } from 'node:crypto';
import { badRequest, conflict, notFound } from '../../lib/errors.js';
import { isUniqueViolation } from '../../store/db.js';
import type { ServiceType, Suspender } from '../../model/enums.js';
import { newId } from '../../lib/ids.js';
import { isRelativeInside } from '../../lib/paths.js';
import type { Repos, Transact } from '../../store/repos/index.js';
import type { ServiceQuery, ServiceRow } from '../../store/repos/services.js';
import { gitTransport } from '../builds/commands.js';
import { deploysNewSource } from '../deploys/deploys.js';
import type { Lifecycle } from '../service-state/lifecycle.js';
import type { DeployPort } from '../deploys/port.js';
import type { Events } from '../events.js';
import { cacheKey, type ReadCache } from '../read-cache.js';
import type { Autoscaling, BuildFilter, ServiceDetails, ServiceDetailsInput } from '../../model/services.js';
import { autoscalingChange } from './autoscaling.js';
import { maintenanceEvents, mergeDetails } from './details.js';
import type { EnvVarInput, EnvVars } from './env-vars.js';
import { createSiteRules } from './site-rules.js';
import { createImagePreview } from './image-previews.js';

export interface ServiceInput {
  type: ServiceType;
  name: string;
  repo?: string;
  branch?: string;
  rootDir?: string;
  autoDeploy?: ServiceRow['autoDeploy'];
  buildFilter?: Partial<BuildFilter>;
  environmentId?: string;
  envVars?: EnvVarInput[];
  serviceDetails?: ServiceDetailsInput;
  /** Render's `image` of an image service. */
  image?: ServiceDetailsInput['image'];
}
export type ServicePatch = Partial<Omit<ServiceInput, 'type' | 'envVars' | 'environmentId'>>;

function checkRootDir(rootDir: string) {
  if (!isRelativeInside(rootDir)) throw badRequest('rootDir must be a relative path inside the source');
  return rootDir.replace(/\/+$/, '');
}

export function checkRepo(repo: string, protocols: string[]) {
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

/** Render's rule: a buildFilter given replaces the one there whole (a missing list is empty). */
const withFilter = (details: ServiceDetails, filter: Partial<BuildFilter> | undefined): ServiceDetails =>
  filter
    ? { ...details, buildFilter: { paths: filter.paths ?? [], ignoredPaths: filter.ignoredPaths ?? [] } }
    : details;

const withImage = (details: ServiceDetailsInput | undefined, image: ServiceInput['image']) =>
  image ? { ...details, image } : details;

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
  /** The git transports a repo may use (builds/commands.ts allowedGitProtocols). */
  gitProtocols: string[];
  /** 402 when the workspace may not add a paid plan now (core/billing/billing.ts). */
  assertMayAddPaid?: (workspaceId: string, kind: 'service', plan: string) => Promise<void>;
  cache: ReadCache;
  /** Why docker and image services cannot run here (the runtime's capabilities.containers); undefined when they can. */
  noContainers?: string;
}) {
  const { repos, transact, envVars, events, engine } = deps;

  async function get(id: string): Promise<ServiceRow> {
    const row = await deps.cache.get(`service:${id}`, ['services'], () => repos.services.get(id));
    if (!row || deps.lifecycle.isRemoving(id)) throw notFound('service');
    return row;
  }

  return {
    get,
    // A page names each service's blueprint (repos/blueprints.ts managerOf).
    list: (q: ServiceQuery) =>
      deps.cache.get(cacheKey('services', q), ['services', 'blueprints', 'blueprint_resources'], () =>
        repos.services.list(q),
      ),
    /** A static site's header and redirect/rewrite rules. */
    rules: createSiteRules({ transact, events, refreshRoute: (service) => engine.refreshRoute(service) }),
    /** The instances running now (their ids label the logs and metrics). */
    instancesOf: (service: ServiceRow) => repos.instances.active({ serviceId: service.id }),

    /**
     * Creates the service; with a repo and autoDeploy it starts the first deploy (Render's serviceAndDeploy), unless
     * `deploy: false` (a blueprint sync deploys once its variables are set).
     */
    async create(
      workspaceId: string,
      input: ServiceInput,
      opts: { deploy?: boolean; details?: ServiceDetails } = {},
    ): Promise<{ service: ServiceRow; deployId?: string }> {
      // `details`: settings copied whole from another service (a pull-request preview's, from its parent).
      const details =
        opts.details ??
        withFilter(
          mergeDetails(input.type, withImage(input.serviceDetails, input.image), undefined, deps.noContainers),
          input.buildFilter,
        );
      if (input.environmentId) await deps.assertEnvironment(workspaceId, input.environmentId);
      await deps.assertMayAddPaid?.(workspaceId, 'service', details.plan);
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
        const created = { name: row.name, type: row.type };
        await events.record({ workspaceId, serviceId: row.id, type: 'service_created', details: created }, tx.events);
        return row;
      });
      events.poke();
      const hasSource = service.repo || service.details.runtime === 'image';
      if (opts.deploy !== false && hasSource && deploysNewSource(service))
        return { service, deployId: (await engine.trigger(service, { trigger: 'api' })).id };
      return { service };
    },

    /** Render's image preview: a copy of an image service on another tag or digest, deployed (image-previews.ts). */
    preview(parent: ServiceRow, input: Parameters<typeof createImagePreview>[2]) {
      return createImagePreview({ envVars, create: (ws, i, opts) => this.create(ws, i, opts) }, parent, input);
    },

    async update(service: ServiceRow, patch: ServicePatch): Promise<ServiceRow> {
      const plan = patch.serviceDetails?.plan;
      if (plan !== undefined && plan !== service.details.plan)
        await deps.assertMayAddPaid?.(service.workspaceId, 'service', plan);
      const updated = await transact(async (tx) => {
        // Merged into the details as they are now, under the row's lock: a concurrent PATCH of another field is kept.
        const current = await tx.services.lock(service.id);
        if (!current) throw notFound('service');
        const details = withFilter(
          mergeDetails(service.type, withImage(patch.serviceDetails, patch.image), current.details, deps.noContainers),
          patch.buildFilter,
        );
        if ((details.numInstances > 1 || details.autoscaling?.enabled) && (await tx.disks.ofService(service.id)))
          throw conflict('a service with a disk runs one instance: remove its disk to scale it');
        const row = await tx.services.update(service.id, {
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.repo !== undefined ? { repo: patch.repo ? checkRepo(patch.repo, deps.gitProtocols) : null } : {}),
          ...(patch.branch !== undefined ? { branch: patch.branch || null } : {}),
          ...(patch.rootDir !== undefined ? { rootDir: checkRootDir(patch.rootDir) } : {}),
          ...(patch.autoDeploy !== undefined ? { autoDeploy: patch.autoDeploy } : {}),
          details,
        });
        if (row) {
          const fields = Object.keys(patch);
          await events.record(
            { workspaceId: row.workspaceId, serviceId: row.id, type: 'service_updated', details: { fields } },
            tx.events,
          );
          if (details.numInstances !== current.details.numInstances) {
            const change = { fromInstances: current.details.numInstances, toInstances: details.numInstances };
            await events.record(
              { workspaceId: row.workspaceId, serviceId: row.id, type: 'instance_count_changed', details: change },
              tx.events,
            );
          }
          for (const e of maintenanceEvents(current.details.maintenanceMode, details.maintenanceMode))
            await events.record({ workspaceId: row.workspaceId, serviceId: row.id, ...e }, tx.events);
        }
        return row;
      }).catch((err: unknown) => {
        throw isUniqueViolation(err)
          ? conflict(`a service named "${patch.name}" already exists in this workspace`)
          : err;
      });
      if (!updated) throw notFound('service');
      events.poke();
      const rules = patch.serviceDetails;
      // Routing settings take effect without a deploy.
      if (rules?.headers !== undefined || rules?.routes !== undefined || rules?.maintenanceMode !== undefined)
        await engine.refreshRoute(updated);
      return updated;
    },

    /** Render's PUT (`a`) and DELETE (null) of autoscaling (core/services/autoscaling.ts runs it). */
    async setAutoscaling(service: ServiceRow, a: Autoscaling | null): Promise<ServiceRow> {
      const change = autoscalingChange(service, a);
      const row = await this.update(service, { serviceDetails: change.serviceDetails });
      const { workspaceId, id: serviceId } = row;
      await events.record({ workspaceId, serviceId, type: 'autoscaling_config_changed', details: change.event });
      return row;
    },
    /** Render's scale: services that run instances only (a static site or a cron job has none to scale). */
    scale(service: ServiceRow, numInstances: number): Promise<ServiceRow> {
      if (service.type === 'static_site' || service.type === 'cron_job')
        throw badRequest(`a ${service.type} runs no instances to scale`);
      return this.update(service, { serviceDetails: { numInstances } });
    },

    // Each event below commits with the change it records (the outbox), and wakes the dispatcher after the commit.
    async remove(service: ServiceRow): Promise<void> {
      await engine.remove(service);
      await transact(async (tx) => {
        await tx.services.delete(service.id);
        await events.record(
          { workspaceId: service.workspaceId, serviceId: service.id, type: 'service_deleted' },
          tx.events,
        );
      });
      events.poke();
    },

    async suspend(service: ServiceRow): Promise<ServiceRow> {
      const suspenders = [...new Set<Suspender>([...service.suspenders, 'user'])];
      const updated = await transact(async (tx) => {
        const row = await tx.services.update(service.id, { suspenders });
        if (!row) throw notFound('service');
        await events.record(
          { workspaceId: service.workspaceId, serviceId: service.id, type: 'service_suspended' },
          tx.events,
        );
        return row;
      });
      events.poke();
      await engine.stopAll(updated);
      return updated;
    },

    async resume(service: ServiceRow): Promise<ServiceRow> {
      if (!service.suspenders.length) return service;
      const updated = await transact(async (tx) => {
        const row = await tx.services.update(service.id, { suspenders: [] });
        if (!row) throw notFound('service');
        await events.record(
          { workspaceId: service.workspaceId, serviceId: service.id, type: 'service_resumed' },
          tx.events,
        );
        return row;
      });
      events.poke();
      await engine.resume(updated);
      return updated;
    },
  };
}
export type Services = ReturnType<typeof createServices>;
