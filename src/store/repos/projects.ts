import { and, asc, count, desc, eq, inArray, lt } from 'drizzle-orm';
import type { Db } from '../db.js';
import { datastores, envGroups, environments, projects, services } from '../schema/index.js';
import { within, type ListWindow } from './filters.js';

export type ProjectRow = typeof projects.$inferSelect;
export type EnvironmentRow = typeof environments.$inferSelect;
export type EnvironmentInsert = typeof environments.$inferInsert;

export interface ProjectQuery extends ListWindow {
  workspaceIds?: string[];
  name?: string[];
}

export interface EnvironmentQuery extends ListWindow {
  workspaceIds?: string[];
  projectIds: string[];
  name?: string[];
  environmentIds?: string[];
}

/** The tables whose rows an environment groups, by their `environment_id`. */
export type ResourceTable = 'services' | 'envGroups' | 'datastores';
const TABLES = { services, envGroups, datastores } as const;

/** What an environment holds, per kind (Render's environment body lists them apart). */
export interface EnvironmentResources {
  serviceIds: string[];
  envGroupIds: string[];
  postgresIds: string[];
  keyValueIds: string[];
}

/** Projects, their environments, and which services, env groups and datastores sit in each. */
export function createProjectRepo(db: Db) {
  return {
    async insertProject(row: typeof projects.$inferInsert): Promise<ProjectRow> {
      const [inserted] = await db.insert(projects).values(row).returning();
      return inserted!;
    },
    async getProject(id: string): Promise<ProjectRow | undefined> {
      const [row] = await db.select().from(projects).where(eq(projects.id, id)).limit(1);
      return row;
    },
    /** Newest first, with Render's filters. */
    listProjects(q: ProjectQuery): Promise<ProjectRow[]> {
      return db
        .select()
        .from(projects)
        .where(
          and(
            q.workspaceIds ? inArray(projects.workspaceId, q.workspaceIds) : undefined,
            q.name?.length ? inArray(projects.name, q.name) : undefined,
            within(projects.createdAt, q.createdAfter, q.createdBefore),
            within(projects.updatedAt, q.updatedAfter, q.updatedBefore),
            q.beforeId ? lt(projects.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(projects.id))
        .limit(q.limit);
    },
    async updateProject(id: string, patch: Partial<typeof projects.$inferInsert>): Promise<ProjectRow | undefined> {
      const [row] = await db
        .update(projects)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(projects.id, id))
        .returning();
      return row;
    },
    /** Deletes the project; its environments go with it (foreign key cascade). */
    async deleteProject(id: string): Promise<void> {
      await db.delete(projects).where(eq(projects.id, id));
    },

    async insertEnvironment(row: EnvironmentInsert): Promise<EnvironmentRow> {
      const [inserted] = await db.insert(environments).values(row).returning();
      return inserted!;
    },
    async getEnvironment(id: string): Promise<EnvironmentRow | undefined> {
      const [row] = await db.select().from(environments).where(eq(environments.id, id)).limit(1);
      return row;
    },
    /**
     * The environments, locked until the transaction ends: moving resources into one and
     * deleting it take this lock first, so neither sees the other half-done.
     */
    lockEnvironments(where: { ids: string[] } | { projectId: string }): Promise<EnvironmentRow[]> {
      if ('ids' in where && !where.ids.length) return Promise.resolve([]);
      return db
        .select()
        .from(environments)
        .where('ids' in where ? inArray(environments.id, where.ids) : eq(environments.projectId, where.projectId))
        .orderBy(asc(environments.id))
        .for('update');
    },
    /** Newest first, with Render's filters. */
    listEnvironments(q: EnvironmentQuery): Promise<EnvironmentRow[]> {
      return db
        .select()
        .from(environments)
        .where(
          and(
            inArray(environments.projectId, q.projectIds),
            q.workspaceIds ? inArray(environments.workspaceId, q.workspaceIds) : undefined,
            q.name?.length ? inArray(environments.name, q.name) : undefined,
            q.environmentIds?.length ? inArray(environments.id, q.environmentIds) : undefined,
            within(environments.createdAt, q.createdAfter, q.createdBefore),
            within(environments.updatedAt, q.updatedAfter, q.updatedBefore),
            q.beforeId ? lt(environments.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(environments.id))
        .limit(q.limit);
    },
    /** Each project's environment ids, oldest first (Render's `environmentIds`). */
    async environmentIdsOf(projectIds: string[]): Promise<Map<string, string[]>> {
      const out = new Map(projectIds.map((id) => [id, [] as string[]]));
      if (!projectIds.length) return out;
      const rows = await db
        .select({ id: environments.id, projectId: environments.projectId })
        .from(environments)
        .where(inArray(environments.projectId, projectIds))
        .orderBy(asc(environments.id));
      for (const r of rows) out.get(r.projectId)?.push(r.id);
      return out;
    },
    async updateEnvironment(id: string, patch: Partial<EnvironmentInsert>): Promise<EnvironmentRow | undefined> {
      const [row] = await db
        .update(environments)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(environments.id, id))
        .returning();
      return row;
    },
    async deleteEnvironment(id: string): Promise<void> {
      await db.delete(environments).where(eq(environments.id, id));
    },

    /** What each environment holds: three queries for any number of environments. */
    async resourcesOf(environmentIds: string[]): Promise<Map<string, EnvironmentResources>> {
      const out = new Map(
        environmentIds.map((id): [string, EnvironmentResources] => [
          id,
          { serviceIds: [], envGroupIds: [], postgresIds: [], keyValueIds: [] },
        ]),
      );
      if (!environmentIds.length) return out;
      const [svc, groups, stores] = await Promise.all([
        db
          .select({ id: services.id, env: services.environmentId })
          .from(services)
          .where(inArray(services.environmentId, environmentIds))
          .orderBy(asc(services.id)),
        db
          .select({ id: envGroups.id, env: envGroups.environmentId })
          .from(envGroups)
          .where(inArray(envGroups.environmentId, environmentIds))
          .orderBy(asc(envGroups.id)),
        db
          .select({ id: datastores.id, env: datastores.environmentId, kind: datastores.kind })
          .from(datastores)
          .where(inArray(datastores.environmentId, environmentIds))
          .orderBy(asc(datastores.id)),
      ]);
      for (const r of svc) out.get(r.env!)?.serviceIds.push(r.id);
      for (const r of groups) out.get(r.env!)?.envGroupIds.push(r.id);
      for (const r of stores) out.get(r.env!)?.[r.kind === 'postgres' ? 'postgresIds' : 'keyValueIds'].push(r.id);
      return out;
    },
    /** How many resources sit in any of these environments (deletion needs none). */
    async countResources(environmentIds: string[]): Promise<number> {
      if (!environmentIds.length) return 0;
      const counts = await Promise.all(
        Object.values(TABLES).map((t) =>
          db.select({ n: count() }).from(t).where(inArray(t.environmentId, environmentIds)),
        ),
      );
      return counts.reduce((sum, [row]) => sum + Number(row?.n ?? 0), 0);
    },
    /** The rows of `table` with these ids: their workspace, environment (and a datastore's kind). */
    findResources(
      table: ResourceTable,
      ids: string[],
    ): Promise<Array<{ id: string; workspaceId: string; environmentId: string | null; kind?: string }>> {
      if (!ids.length) return Promise.resolve([]);
      if (table === 'datastores') {
        const d = datastores;
        return db
          .select({ id: d.id, workspaceId: d.workspaceId, environmentId: d.environmentId, kind: d.kind })
          .from(d)
          .where(inArray(d.id, ids));
      }
      const t = TABLES[table];
      return db
        .select({ id: t.id, workspaceId: t.workspaceId, environmentId: t.environmentId })
        .from(t)
        .where(inArray(t.id, ids));
    },
    /**
     * Puts the rows in `environmentId`, or (null) takes them out of `from`: a row in another
     * environment than `from` is left where it is.
     */
    async setEnvironment(
      table: ResourceTable,
      ids: string[],
      environmentId: string | null,
      from?: string,
    ): Promise<void> {
      if (!ids.length) return;
      const t = TABLES[table];
      await db
        .update(t)
        .set({ environmentId, updatedAt: new Date() })
        .where(and(inArray(t.id, ids), from ? eq(t.environmentId, from) : undefined));
    },
  };
}
export type ProjectRepo = ReturnType<typeof createProjectRepo>;
