import { and, desc, eq, gt, isNull, lt, or, isNotNull } from 'drizzle-orm';
import type { Db } from '../db.js';
import { invites } from '../schema/index.js';

export type InviteRow = typeof invites.$inferSelect;

export function createInviteRepo(db: Db) {
  return {
    async insert(row: typeof invites.$inferInsert): Promise<InviteRow> {
      const [invite] = await db.insert(invites).values(row).returning();
      return invite!;
    },
    async findByTokenHash(tokenHash: string): Promise<InviteRow | undefined> {
      const [row] = await db.select().from(invites).where(eq(invites.tokenHash, tokenHash)).limit(1);
      return row;
    },
    async get(id: string): Promise<InviteRow | undefined> {
      const [row] = await db.select().from(invites).where(eq(invites.id, id)).limit(1);
      return row;
    },
    /** Pending (not accepted, not expired) invites of a workspace, newest first. */
    listPending(workspaceId: string, now: Date, opts: { beforeId?: string; limit: number }): Promise<InviteRow[]> {
      return db
        .select()
        .from(invites)
        .where(
          and(
            eq(invites.workspaceId, workspaceId),
            isNull(invites.acceptedAt),
            gt(invites.expiresAt, now),
            opts.beforeId ? lt(invites.id, opts.beforeId) : undefined,
          ),
        )
        .orderBy(desc(invites.id))
        .limit(opts.limit);
    },
    /** Marks accepted unless it already was; false when another request got there first. */
    async markAccepted(id: string, userId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(invites)
        .set({ acceptedAt: now, acceptedBy: userId })
        .where(and(eq(invites.id, id), isNull(invites.acceptedAt)))
        .returning({ id: invites.id });
      return rows.length === 1;
    },
    async delete(id: string): Promise<void> {
      await db.delete(invites).where(eq(invites.id, id));
    },
    async deleteFinished(expiredBefore: Date): Promise<number> {
      const rows = await db
        .delete(invites)
        .where(or(lt(invites.expiresAt, expiredBefore), isNotNull(invites.acceptedAt)))
        .returning({ id: invites.id });
      return rows.length;
    },
  };
}
export type InviteRepo = ReturnType<typeof createInviteRepo>;
