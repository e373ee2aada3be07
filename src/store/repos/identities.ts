import { and, asc, eq } from 'drizzle-orm';
import type { Db } from '../db.js';
import { identities, users } from '../schema/index.js';

export type IdentityRow = typeof identities.$inferSelect;

/** Users' sign-in identities at OAuth providers. */
export function createIdentityRepo(db: Db) {
  return {
    /** The identity and its user. */
    async find(provider: string, subject: string) {
      const [row] = await db
        .select({ identity: identities, user: users })
        .from(identities)
        .innerJoin(users, eq(identities.userId, users.id))
        .where(and(eq(identities.provider, provider), eq(identities.subject, subject)))
        .limit(1);
      return row;
    },
    async insert(row: typeof identities.$inferInsert): Promise<IdentityRow> {
      const [inserted] = await db.insert(identities).values(row).returning();
      return inserted!;
    },
    listOf(userId: string): Promise<IdentityRow[]> {
      return db.select().from(identities).where(eq(identities.userId, userId)).orderBy(asc(identities.id));
    },
    /**
     * Deletes one of the user's identities; with `keepOne`, not the last. The user's row is locked first, so two
     * unlinks at once cannot both see a second identity and leave none.
     */
    unlink(userId: string, id: string, opts: { keepOne: boolean }): Promise<'done' | 'missing' | 'last'> {
      return db.transaction(async (tx) => {
        await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for('update');
        const mine = await tx.select({ id: identities.id }).from(identities).where(eq(identities.userId, userId));
        if (!mine.some((i) => i.id === id)) return 'missing';
        if (opts.keepOne && mine.length === 1) return 'last';
        await tx.delete(identities).where(and(eq(identities.id, id), eq(identities.userId, userId)));
        return 'done';
      });
    },
  };
}
export type IdentityRepo = ReturnType<typeof createIdentityRepo>;
