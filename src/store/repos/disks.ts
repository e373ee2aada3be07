import { and, desc, eq, inArray, lt } from 'drizzle-orm';
import type { Db } from '../db.js';
import { disks, diskSnapshots } from '../schema/index.js';
import { within, type ListWindow } from './filters.js';

export type DiskRow = typeof disks.$inferSelect;
export type DiskInsert = typeof disks.$inferInsert;
export type DiskSnapshotRow = typeof diskSnapshots.$inferSelect;

/** Render's list filters on disks. */
export interface DiskQuery extends ListWindow {
  workspaceIds?: string[];
  ids?: string[];
  name?: string[];
  serviceIds?: string[];
}

export function createDiskRepo(db: Db) {
  return {
    async insert(row: DiskInsert): Promise<DiskRow> {
      const [inserted] = await db.insert(disks).values(row).returning();
      return inserted!;
    },
    async get(id: string): Promise<DiskRow | undefined> {
      const [row] = await db.select().from(disks).where(eq(disks.id, id)).limit(1);
      return row;
    },
    async ofService(serviceId: string): Promise<DiskRow | undefined> {
      const [row] = await db.select().from(disks).where(eq(disks.serviceId, serviceId)).limit(1);
      return row;
    },
    /** Every disk, for the snapshot loop (one per service at most). */
    all(): Promise<DiskRow[]> {
      return db.select().from(disks).orderBy(disks.id);
    },
    /** Newest first, with Render's filters. */
    list(q: DiskQuery): Promise<DiskRow[]> {
      return db
        .select()
        .from(disks)
        .where(
          and(
            q.workspaceIds ? inArray(disks.workspaceId, q.workspaceIds) : undefined,
            q.ids?.length ? inArray(disks.id, q.ids) : undefined,
            q.name?.length ? inArray(disks.name, q.name) : undefined,
            q.serviceIds?.length ? inArray(disks.serviceId, q.serviceIds) : undefined,
            within(disks.createdAt, q.createdAfter, q.createdBefore),
            within(disks.updatedAt, q.updatedAfter, q.updatedBefore),
            q.beforeId ? lt(disks.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(disks.id))
        .limit(q.limit);
    },
    async update(id: string, patch: Partial<Pick<DiskInsert, 'name' | 'sizeGb' | 'mountPath'>>) {
      const [row] = await db
        .update(disks)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(disks.id, id))
        .returning();
      return row;
    },
    async delete(id: string): Promise<void> {
      await db.delete(disks).where(eq(disks.id, id));
    },
    async addSnapshot(row: typeof diskSnapshots.$inferInsert): Promise<DiskSnapshotRow> {
      const [inserted] = await db.insert(diskSnapshots).values(row).returning();
      return inserted!;
    },
    /** Newest first. */
    snapshots(diskId: string): Promise<DiskSnapshotRow[]> {
      return db.select().from(diskSnapshots).where(eq(diskSnapshots.diskId, diskId)).orderBy(desc(diskSnapshots.id));
    },
    async getSnapshot(diskId: string, id: string): Promise<DiskSnapshotRow | undefined> {
      const [row] = await db
        .select()
        .from(diskSnapshots)
        .where(and(eq(diskSnapshots.diskId, diskId), eq(diskSnapshots.id, id)))
        .limit(1);
      return row;
    },
    async deleteSnapshots(ids: string[]): Promise<void> {
      if (ids.length) await db.delete(diskSnapshots).where(inArray(diskSnapshots.id, ids));
    },
  };
}
export type DiskRepo = ReturnType<typeof createDiskRepo>;
