import { and, eq, lt } from 'drizzle-orm';
import type { Db } from '../db.js';
import { idempotencyKeys } from '../schema/index.js';

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

export function createIdempotencyRepo(db: Db) {
  const where = (scope: string, key: string) => and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key));
  return {
    /** Claims the key for a new request; returns the existing row when it was already claimed. */
    async claim(scope: string, key: string, requestHash: string): Promise<IdempotencyRow | undefined> {
      const inserted = await db
        .insert(idempotencyKeys)
        .values({ scope, key, requestHash })
        .onConflictDoNothing()
        .returning();
      if (inserted.length === 1) return undefined;
      const [existing] = await db.select().from(idempotencyKeys).where(where(scope, key)).limit(1);
      return existing;
    },
    async complete(scope: string, key: string, statusCode: number, sealedReply: string): Promise<void> {
      await db.update(idempotencyKeys).set({ statusCode, sealedReply }).where(where(scope, key));
    },
    async release(scope: string, key: string): Promise<void> {
      await db.delete(idempotencyKeys).where(where(scope, key));
    },
    async deleteOlderThan(cutoff: Date): Promise<number> {
      return (
        await db
          .delete(idempotencyKeys)
          .where(lt(idempotencyKeys.createdAt, cutoff))
          .returning({ k: idempotencyKeys.key })
      ).length;
    },
  };
}
export type IdempotencyRepo = ReturnType<typeof createIdempotencyRepo>;
