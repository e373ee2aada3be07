import { and, desc, eq, inArray, lt } from 'drizzle-orm';
import type { Db } from '../db.js';
import { registryCredentials } from '../schema/index.js';
import { within, type ListWindow } from './filters.js';

export type RegistryCredentialRow = typeof registryCredentials.$inferSelect;
export type RegistryCredentialInsert = typeof registryCredentials.$inferInsert;

/** Render's list filters on registry credentials. */
export interface RegistryCredentialQuery extends ListWindow {
  workspaceIds?: string[];
  name?: string[];
  username?: string[];
  registry?: string[];
}

export function createRegistryCredentialRepo(db: Db) {
  return {
    async insert(row: RegistryCredentialInsert): Promise<RegistryCredentialRow> {
      const [inserted] = await db.insert(registryCredentials).values(row).returning();
      return inserted!;
    },
    async get(id: string): Promise<RegistryCredentialRow | undefined> {
      const [row] = await db.select().from(registryCredentials).where(eq(registryCredentials.id, id)).limit(1);
      return row;
    },
    /** The workspace and name of each of `ids` that exists, in one query (a page of services names its credentials). */
    namesOf(ids: readonly string[]): Promise<Pick<RegistryCredentialRow, 'id' | 'workspaceId' | 'name'>[]> {
      if (!ids.length) return Promise.resolve([]);
      const { id, workspaceId, name } = registryCredentials;
      return db
        .select({ id, workspaceId, name })
        .from(registryCredentials)
        .where(inArray(id, [...ids]));
    },
    /** Newest first, with Render's filters. */
    list(q: RegistryCredentialQuery): Promise<RegistryCredentialRow[]> {
      return db
        .select()
        .from(registryCredentials)
        .where(
          and(
            q.workspaceIds ? inArray(registryCredentials.workspaceId, q.workspaceIds) : undefined,
            q.name?.length ? inArray(registryCredentials.name, q.name) : undefined,
            q.username?.length ? inArray(registryCredentials.username, q.username) : undefined,
            q.registry?.length
              ? inArray(registryCredentials.registry, q.registry as RegistryCredentialRow['registry'][])
              : undefined,
            within(registryCredentials.createdAt, q.createdAfter, q.createdBefore),
            within(registryCredentials.updatedAt, q.updatedAfter, q.updatedBefore),
            q.beforeId ? lt(registryCredentials.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(registryCredentials.id))
        .limit(q.limit);
    },
    async update(
      id: string,
      patch: Partial<Omit<RegistryCredentialInsert, 'id' | 'workspaceId'>>,
    ): Promise<RegistryCredentialRow | undefined> {
      const [row] = await db
        .update(registryCredentials)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(registryCredentials.id, id))
        .returning();
      return row;
    },
    async delete(id: string): Promise<void> {
      await db.delete(registryCredentials).where(eq(registryCredentials.id, id));
    },
  };
}
export type RegistryCredentialRepo = ReturnType<typeof createRegistryCredentialRepo>;
