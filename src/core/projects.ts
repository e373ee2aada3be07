import { isIP } from 'node:net';
import { badRequest, conflict, forbidden, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { isUniqueViolation } from '../store/db.js';
import type { Repos, Transact } from '../store/repos/index.js';
import type {
  EnvironmentQuery,
  EnvironmentResources,
  EnvironmentRow,
  ProjectQuery,
  ProjectRow,
  ResourceTable,
} from '../store/repos/projects.js';
import type { DatastoreKind } from '../store/repos/datastores.js';
import type { WorkspaceRow } from '../store/repos/workspaces.js';
import { roleAtLeast, type Role } from './principal.js';

export interface ProjectView {
  project: ProjectRow;
  environmentIds: string[];
  owner: WorkspaceRow;
}
export interface EnvironmentView {
  environment: EnvironmentRow;
  held: EnvironmentResources;
}

export interface IpRule {
  cidrBlock: string;
  description: string;
}
export interface EnvironmentInput {
  name: string;
  protectedStatus?: EnvironmentRow['protectedStatus'];
  networkIsolationEnabled?: boolean;
  ipAllowList?: IpRule[];
}
export type EnvironmentPatch = Partial<EnvironmentInput>;

/** Render's id prefixes of what an environment may hold, and where each lives. */
const RESOURCE_KINDS: Record<string, { table: ResourceTable; kind?: DatastoreKind; what: string }> = {
  srv: { table: 'services', what: 'service' },
  evg: { table: 'envGroups', what: 'env group' },
  dpg: { table: 'datastores', kind: 'postgres', what: 'Postgres database' },
  red: { table: 'datastores', kind: 'keyValue', what: 'key-value instance' },
};

function checkIpAllowList(rules: IpRule[] | undefined): IpRule[] | undefined {
  for (const { cidrBlock } of rules ?? []) {
    const [address = '', bits, extra] = cidrBlock.split('/');
    const family = isIP(address);
    if (
      !family ||
      extra !== undefined ||
      !bits ||
      !/^\d{1,3}$/.test(bits) ||
      Number(bits) > (family === 4 ? 32 : 128)
    ) {
      throw badRequest(`ipAllowList: "${cidrBlock}" is not a CIDR block such as 203.0.113.0/24`);
    }
  }
  return rules;
}

/**
 * Render's rule for protected environments: only admins (and owners) perform destructive
 * actions in them: delete them, take resources out, or lift the protection.
 */
function mayDestroy(role: Role, env: Pick<EnvironmentRow, 'name' | 'protectedStatus'>) {
  if (env.protectedStatus === 'protected' && !roleAtLeast(role, 'admin')) {
    throw forbidden(`environment "${env.name}" is protected: this needs the admin role; you are ${role}`);
  }
}

/**
 * Projects group environments; an environment groups services, env groups and datastores
 * (their `environment_id`). Render's rules: deleting needs empty environments (409 otherwise),
 * and moving resources is all or nothing.
 */
export function createProjects(deps: { repos: Pick<Repos, 'projects' | 'workspaces'>; transact: Transact }) {
  const { repos, transact } = deps;
  const named =
    <T>(what: string, name: string) =>
    (err: unknown): T => {
      throw isUniqueViolation(err) ? conflict(`${what} named "${name}" already exists in this project`) : err;
    };
  const envRow = (projectId: string, workspaceId: string, input: EnvironmentInput, now = Date.now()) => ({
    id: newId('environment', now),
    projectId,
    workspaceId,
    name: input.name,
    protectedStatus: input.protectedStatus ?? 'unprotected',
    networkIsolationEnabled: input.networkIsolationEnabled ?? false,
    ipAllowList: checkIpAllowList(input.ipAllowList) ?? [],
  });

  async function getProject(id: string): Promise<ProjectRow> {
    const row = await repos.projects.getProject(id);
    if (!row) throw notFound('project');
    return row;
  }
  async function getEnvironment(id: string): Promise<EnvironmentRow> {
    const row = await repos.projects.getEnvironment(id);
    if (!row) throw notFound('environment');
    return row;
  }

  /**
   * The resources named by `ids`, grouped by table: each must exist in `workspaceId`, or the
   * whole request fails before anything changes.
   */
  async function resolve(workspaceId: string, ids: string[]) {
    const byTable: Record<ResourceTable, string[]> = { services: [], envGroups: [], datastores: [] };
    const unique = [...new Set(ids)];
    for (const id of unique) {
      const known = /^[a-z]{3}-/.test(id) ? RESOURCE_KINDS[id.slice(0, 3)] : undefined;
      if (!known)
        throw badRequest(
          `resourceIds: "${id}" is not the id of a service (srv-), env group (evg-), Postgres database (dpg-) or key-value instance (red-)`,
        );
      byTable[known.table].push(id);
    }
    const environmentIds = new Set<string>();
    for (const table of Object.keys(byTable) as ResourceTable[]) {
      const found = new Map((await repos.projects.findResources(table, byTable[table])).map((r) => [r.id, r]));
      for (const id of byTable[table]) {
        const row = found.get(id);
        const known = RESOURCE_KINDS[id.slice(0, 3)]!;
        if (!row || row.workspaceId !== workspaceId || (known.kind && row.kind !== known.kind))
          throw notFound(`${known.what} ${id}`);
        if (row.environmentId) environmentIds.add(row.environmentId);
      }
    }
    return { byTable, environmentIds: [...environmentIds] };
  }

  /** Moves resources in (`to` = the environment) or out (`to` = null) in one transaction. */
  async function move(env: EnvironmentRow, ids: string[], role: Role, to: string | null) {
    const { byTable, environmentIds } = await resolve(env.workspaceId, ids);
    await transact(async (tx) => {
      const [locked] = await tx.projects.lockEnvironments({ ids: [env.id] });
      if (!locked) throw notFound('environment');
      // Taking a resource out of a protected environment (this one, or the one it leaves to come here) is destructive.
      if (to === null) mayDestroy(role, locked);
      else
        for (const source of await tx.projects.lockEnvironments({ ids: environmentIds.filter((id) => id !== env.id) }))
          mayDestroy(role, source);
      for (const table of Object.keys(byTable) as ResourceTable[])
        await tx.projects.setEnvironment(table, byTable[table], to, to ? undefined : env.id);
    });
  }

  /** Each project with its environment ids and owning workspace (Render's `project` body, unserialized). */
  async function projectViews(rows: ProjectRow[]): Promise<ProjectView[]> {
    const envIds = await repos.projects.environmentIdsOf(rows.map((p) => p.id));
    const owners = new Map<string, WorkspaceRow>();
    for (const id of new Set(rows.map((p) => p.workspaceId))) {
      const workspace = await repos.workspaces.get(id);
      if (workspace) owners.set(id, workspace);
    }
    return rows.map((project) => ({
      project,
      environmentIds: envIds.get(project.id) ?? [],
      owner: owners.get(project.workspaceId)!,
    }));
  }

  return {
    getProject,
    getEnvironment,
    listProjects: (q: ProjectQuery) => repos.projects.listProjects(q),
    listEnvironments: (q: EnvironmentQuery) => repos.projects.listEnvironments(q),

    /** 404 unless the environment exists in the workspace: for resources created into one. */
    async assertEnvironment(workspaceId: string, environmentId: string): Promise<void> {
      const env = await repos.projects.getEnvironment(environmentId);
      if (!env || env.workspaceId !== workspaceId) throw notFound(`environment ${environmentId}`);
    },

    /** Render's create-project: the project and its environments, together or not at all. */
    createProject(workspaceId: string, input: { name: string; environments: EnvironmentInput[] }): Promise<ProjectRow> {
      // Validated before anything is written. Ids sort by time: one ms apart keeps the
      // request's order in environmentIds (ids made in the same ms would sort at random).
      const now = Date.now();
      const rows = input.environments.map((e, i) => envRow('', workspaceId, e, now + i));
      return transact(async (tx) => {
        const project = await tx.projects.insertProject({ id: newId('project'), workspaceId, name: input.name });
        for (const row of rows)
          await tx.projects
            .insertEnvironment({ ...row, projectId: project.id })
            .catch(named('an environment', row.name));
        return project;
      });
    },
    renameProject: async (project: ProjectRow, name: string | undefined) =>
      name === undefined ? project : ((await repos.projects.updateProject(project.id, { name })) ?? project),
    /** Render's rule: only a project whose environments are all empty can be deleted (409 otherwise). */
    deleteProject(project: ProjectRow, role: Role): Promise<void> {
      return transact(async (tx) => {
        const envs = await tx.projects.lockEnvironments({ projectId: project.id });
        for (const env of envs) mayDestroy(role, env);
        const held = await tx.projects.countResources(envs.map((e) => e.id));
        if (held)
          throw conflict(
            `project "${project.name}" still has ${held} resource(s) in its environments; move or delete them first`,
          );
        await tx.projects.deleteProject(project.id);
      });
    },

    createEnvironment(project: ProjectRow, input: EnvironmentInput): Promise<EnvironmentRow> {
      const row = envRow(project.id, project.workspaceId, input);
      return transact(async (tx) => {
        const env = await tx.projects.insertEnvironment(row).catch(named<EnvironmentRow>('an environment', input.name));
        await tx.projects.updateProject(project.id, {}); // its environmentIds changed
        return env;
      });
    },
    async updateEnvironment(env: EnvironmentRow, patch: EnvironmentPatch, role: Role): Promise<EnvironmentRow> {
      if (
        patch.protectedStatus !== undefined &&
        patch.protectedStatus !== env.protectedStatus &&
        !roleAtLeast(role, 'admin')
      ) {
        throw forbidden(`changing protectedStatus needs the admin role; you are ${role}`);
      }
      const updated = await repos.projects
        .updateEnvironment(env.id, {
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.protectedStatus !== undefined ? { protectedStatus: patch.protectedStatus } : {}),
          ...(patch.networkIsolationEnabled !== undefined
            ? { networkIsolationEnabled: patch.networkIsolationEnabled }
            : {}),
          ...(patch.ipAllowList !== undefined ? { ipAllowList: checkIpAllowList(patch.ipAllowList) } : {}),
        })
        .catch(named<undefined>('an environment', patch.name ?? env.name));
      if (!updated) throw notFound('environment');
      return updated;
    },
    /** Render's rule: only an empty environment can be deleted (409 otherwise). */
    deleteEnvironment(env: EnvironmentRow, role: Role): Promise<void> {
      return transact(async (tx) => {
        const [locked] = await tx.projects.lockEnvironments({ ids: [env.id] });
        if (!locked) throw notFound('environment');
        mayDestroy(role, locked);
        const held = await tx.projects.countResources([env.id]);
        if (held)
          throw conflict(`environment "${env.name}" still holds ${held} resource(s); move or delete them first`);
        await tx.projects.deleteEnvironment(env.id);
        await tx.projects.updateProject(env.projectId, {});
      });
    },
    /** Moves the resources into the environment (out of any other): all of them, or none. */
    addResources: (env: EnvironmentRow, ids: string[], role: Role) => move(env, ids, role, env.id),
    /** Takes the resources out of the environment; one that is not in it is left where it is. */
    removeResources: (env: EnvironmentRow, ids: string[], role: Role) => move(env, ids, role, null),

    projectViews,
    /** The project an environment is in, for the resources that name theirs (Render's postgresDetail). */
    async projectOfEnvironment(environmentId: string): Promise<ProjectView | undefined> {
      const env = await repos.projects.getEnvironment(environmentId);
      const project = env && (await repos.projects.getProject(env.projectId));
      return project ? (await projectViews([project]))[0] : undefined;
    },
    /** Each environment with what it holds (Render's `environment` body, unserialized). */
    async environmentViews(rows: EnvironmentRow[]): Promise<EnvironmentView[]> {
      const held = await repos.projects.resourcesOf(rows.map((e) => e.id));
      return rows.map((environment) => ({ environment, held: held.get(environment.id)! }));
    },
  };
}
export type Projects = ReturnType<typeof createProjects>;
