import { and, desc, eq, inArray, lt, or, sql, getTableColumns } from 'drizzle-orm';
import { managerOf, type Manager } from './blueprints.js';
import type { Db } from '../db.js';
import type { Suspended } from '../../model/enums.js';
import { services } from '../schema/index.js';
import { within, type ListWindow } from './filters.js';

export type ServiceRow = typeof services.$inferSelect;
export type ServiceInsert = typeof services.$inferInsert;

export interface ServiceQuery extends ListWindow {
  workspaceIds?: string[];
  name?: string[];
  type?: string[];
  suspended?: Suspended[];
  environmentId?: string[];
}

export function createServiceRepo(db: Db) {
  return {
    async insert(row: ServiceInsert): Promise<ServiceRow> {
      const [inserted] = await db.insert(services).values(row).returning();
      return inserted!;
    },
    async get(id: string): Promise<ServiceRow | undefined> {
      const [row] = await db.select().from(services).where(eq(services.id, id)).limit(1);
      return row;
    },
    /** The row, locked until the transaction ends (a read-modify-write of `details`). */
    async lock(id: string): Promise<ServiceRow | undefined> {
      const [row] = await db.select().from(services).where(eq(services.id, id)).for('update');
      return row;
    },
    async slugTaken(slug: string): Promise<boolean> {
      return (await db.select({ id: services.id }).from(services).where(eq(services.slug, slug)).limit(1)).length > 0;
    },
    /** Newest first, with Render's filters. */
    list(q: ServiceQuery): Promise<Array<ServiceRow & { manager: Manager }>> {
      const suspended = q.suspended?.length === 1 ? q.suspended[0] : undefined;
      return db
        .select({ ...getTableColumns(services), manager: managerOf('services') })
        .from(services)
        .where(
          and(
            q.workspaceIds ? inArray(services.workspaceId, q.workspaceIds) : undefined,
            q.name?.length ? inArray(services.name, q.name) : undefined,
            q.type?.length ? inArray(services.type, q.type as ServiceRow['type'][]) : undefined,
            q.environmentId?.length ? inArray(services.environmentId, q.environmentId) : undefined,
            suspended === 'suspended' ? sql`jsonb_array_length(${services.suspenders}) > 0` : undefined,
            suspended === 'not_suspended' ? sql`jsonb_array_length(${services.suspenders}) = 0` : undefined,
            within(services.createdAt, q.createdAfter, q.createdBefore),
            within(services.updatedAt, q.updatedAfter, q.updatedBefore),
            q.beforeId ? lt(services.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(services.id))
        .limit(q.limit);
    },
    /** Services that should be running: not suspended and with a live deploy. */
    listRunnable(): Promise<ServiceRow[]> {
      return db
        .select()
        .from(services)
        .where(sql`${services.liveDeployId} is not null`);
    },
    async update(id: string, patch: Partial<ServiceInsert>): Promise<ServiceRow | undefined> {
      const [row] = await db
        .update(services)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(services.id, id))
        .returning();
      return row;
    },
    /**
     * A workspace's services that pull with a registry credential (`details.docker` or `details.image` name it): by
     * JSON containment, which PGlite and Postgres both answer. At most `limit`, oldest first.
     */
    usingRegistryCredential(workspaceId: string, credentialId: string, limit = 10) {
      const uses = (field: 'docker' | 'image') =>
        sql`${services.details} @> ${JSON.stringify({ [field]: { registryCredentialId: credentialId } })}::jsonb`;
      return db
        .select({ id: services.id, name: services.name })
        .from(services)
        .where(and(eq(services.workspaceId, workspaceId), or(uses('docker'), uses('image'))))
        .orderBy(services.id)
        .limit(limit);
    },
    /** Services with autoscaling enabled (the autoscaler's rounds; few, and read by a scan of the details). */
    async autoscaled(): Promise<ServiceRow[]> {
      return db
        .select()
        .from(services)
        .where(sql`(${services.details} -> 'autoscaling' ->> 'enabled') = 'true'`);
    },
    /** The service's measured disk use: not a change the user made, so updatedAt stays. */
    async setDiskBytes(id: string, diskBytes: number): Promise<void> {
      await db.update(services).set({ diskBytes }).where(eq(services.id, id));
    },
    async delete(id: string): Promise<void> {
      await db.delete(services).where(eq(services.id, id));
    },
  };
}
export type ServiceRepo = ReturnType<typeof createServiceRepo>;
