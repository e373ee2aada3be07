import { and, desc, eq, inArray, lt, lte, getTableColumns } from 'drizzle-orm';
import { managerOf, type Manager } from './blueprints.js';
import type { Db } from '../db.js';
import type { Suspended } from '../../model/enums.js';
import { datastores, deletedDatastores } from '../schema/index.js';
import { within, type ListWindow } from './filters.js';

export type DatastoreRow = typeof datastores.$inferSelect;
export type DatastoreInsert = typeof datastores.$inferInsert;
export type DatastoreKind = DatastoreRow['kind'];
export type DatastoreStatus = DatastoreRow['status'];

/** A deleted datastore whose backups are kept: its row as it was, when it went, and until when it can be recovered. */
export interface DeletedDatastore {
  row: DatastoreRow;
  deletedAt: Date;
  backupsUntil: Date;
}

const revive = (r: typeof deletedDatastores.$inferSelect): DeletedDatastore => {
  const row = r.row as unknown as DatastoreRow;
  return {
    row: { ...row, createdAt: new Date(row.createdAt), updatedAt: new Date(row.updatedAt) },
    deletedAt: r.deletedAt,
    backupsUntil: r.backupsUntil,
  };
};

export interface DatastoreQuery extends ListWindow {
  kind: DatastoreKind;
  workspaceIds?: string[];
  name?: string[];
  environmentId?: string[];
  suspended?: Suspended[];
}

export function createDatastoreRepo(db: Db) {
  return {
    async insert(row: DatastoreInsert): Promise<DatastoreRow> {
      const [inserted] = await db.insert(datastores).values(row).returning();
      return inserted!;
    },
    async get(id: string): Promise<DatastoreRow | undefined> {
      const [row] = await db.select().from(datastores).where(eq(datastores.id, id)).limit(1);
      return row;
    },
    /** Newest first, with Render's filters. */
    list(q: DatastoreQuery): Promise<Array<DatastoreRow & { manager: Manager }>> {
      const suspended = q.suspended?.length === 1 ? q.suspended[0] : undefined;
      return db
        .select({ ...getTableColumns(datastores), manager: managerOf('datastores') })
        .from(datastores)
        .where(
          and(
            eq(datastores.kind, q.kind),
            q.workspaceIds ? inArray(datastores.workspaceId, q.workspaceIds) : undefined,
            q.name?.length ? inArray(datastores.name, q.name) : undefined,
            q.environmentId?.length ? inArray(datastores.environmentId, q.environmentId) : undefined,
            suspended ? eq(datastores.suspended, suspended === 'suspended') : undefined,
            within(datastores.createdAt, q.createdAfter, q.createdBefore),
            within(datastores.updatedAt, q.updatedAfter, q.updatedBefore),
            q.beforeId ? lt(datastores.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(datastores.id))
        .limit(q.limit);
    },
    /** Every datastore, for the reconciler (a few per machine, not millions). */
    all(): Promise<DatastoreRow[]> {
      return db.select().from(datastores).orderBy(datastores.id);
    },
    async update(id: string, patch: Partial<DatastoreInsert>): Promise<DatastoreRow | undefined> {
      const [row] = await db
        .update(datastores)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(datastores.id, id))
        .returning();
      return row;
    },
    async delete(id: string): Promise<boolean> {
      return (await db.delete(datastores).where(eq(datastores.id, id)).returning({ id: datastores.id })).length > 0;
    },
    /** Remembers a deleted datastore whose backups are kept until `backupsUntil`. */
    async keepDeleted(row: DatastoreRow, backupsUntil: Date): Promise<void> {
      await db
        .insert(deletedDatastores)
        .values({ id: row.id, workspaceId: row.workspaceId, row: JSON.parse(JSON.stringify(row)), backupsUntil });
    },
    async getDeleted(id: string): Promise<DeletedDatastore | undefined> {
      const [row] = await db.select().from(deletedDatastores).where(eq(deletedDatastores.id, id)).limit(1);
      return row && revive(row);
    },
    /** Deleted datastores whose backups are due to go (their window ended by `now`). */
    async deletedUntil(now: Date): Promise<DeletedDatastore[]> {
      const rows = await db.select().from(deletedDatastores).where(lte(deletedDatastores.backupsUntil, now)).limit(100);
      return rows.map(revive);
    },
    async forgetDeleted(id: string): Promise<void> {
      await db.delete(deletedDatastores).where(eq(deletedDatastores.id, id));
    },
  };
}
export type DatastoreRepo = ReturnType<typeof createDatastoreRepo>;
