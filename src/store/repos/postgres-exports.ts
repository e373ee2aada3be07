import { and, desc, eq, gt, inArray, lt, lte } from 'drizzle-orm';
import type { Db } from '../db.js';
import { postgresExports } from '../schema/index.js';

export type PostgresExportRow = typeof postgresExports.$inferSelect;

/** Rows of `pg_dump` exports; their files are core/datastores/exports.ts's. */
export function createPostgresExportRepo(db: Db) {
  const t = postgresExports;
  return {
    async insert(row: typeof t.$inferInsert): Promise<PostgresExportRow> {
      const [created] = await db.insert(t).values(row).returning();
      return created!;
    },
    async get(id: string): Promise<PostgresExportRow | undefined> {
      const [found] = await db.select().from(t).where(eq(t.id, id)).limit(1);
      return found;
    },
    /** A datastore's unexpired exports, newest first. */
    list: (datastoreId: string, now: Date): Promise<PostgresExportRow[]> =>
      db
        .select()
        .from(t)
        .where(and(eq(t.datastoreId, datastoreId), gt(t.expiresAt, now)))
        .orderBy(desc(t.id)),
    async finish(id: string, patch: Pick<PostgresExportRow, 'status' | 'sizeBytes' | 'error'>): Promise<void> {
      await db
        .update(t)
        .set({ ...patch, finishedAt: new Date() })
        .where(eq(t.id, id));
    },
    async heartbeat(id: string): Promise<void> {
      await db.update(t).set({ heartbeatAt: new Date() }).where(eq(t.id, id));
    },
    /** Running exports whose heartbeat stopped before `before` become failed, with `error`. */
    async failStale(datastoreId: string, before: Date, error: string): Promise<void> {
      await db
        .update(t)
        .set({ status: 'failed', error, finishedAt: new Date() })
        .where(and(eq(t.datastoreId, datastoreId), eq(t.status, 'running'), lt(t.heartbeatAt, before)));
    },
    async remove(ids: string[]): Promise<void> {
      if (ids.length > 0) await db.delete(t).where(inArray(t.id, ids));
    },
    /** Removes the rows expired by `now`; returns them (their files go next). */
    deleteExpired: (now: Date): Promise<Array<{ id: string; datastoreId: string }>> =>
      db.delete(t).where(lte(t.expiresAt, now)).returning({ id: t.id, datastoreId: t.datastoreId }),
  };
}
export type PostgresExportRepo = ReturnType<typeof createPostgresExportRepo>;
