import { eq, lt, sql } from 'drizzle-orm';
import { lazy } from '../../lib/lazy.js';
import type { Db } from '../db.js';
import { sessions, users } from '../schema/index.js';
import type { UserRow } from './users.js';

export type SessionRow = typeof sessions.$inferSelect;

export function createSessionRepo(db: Db) {
  // Runs on every cookie request: built once, executed as a named prepared statement.
  const byTokenHash = lazy(() =>
    db
      .select({ session: sessions, user: users })
      .from(sessions)
      .innerJoin(users, eq(users.id, sessions.userId))
      .where(eq(sessions.tokenHash, sql.placeholder('tokenHash')))
      .limit(1)
      .prepare('session_by_token_hash'),
  );
  return {
    async insert(row: typeof sessions.$inferInsert): Promise<void> {
      await db.insert(sessions).values(row);
    },
    /** The session and its user in one query. */
    async findByTokenHash(tokenHash: string): Promise<{ session: SessionRow; user: UserRow } | undefined> {
      const [row] = await byTokenHash().execute({ tokenHash });
      return row;
    },
    async delete(id: string): Promise<void> {
      await db.delete(sessions).where(eq(sessions.id, id));
    },
    async deleteExpired(now: Date): Promise<number> {
      return (await db.delete(sessions).where(lt(sessions.expiresAt, now)).returning({ id: sessions.id })).length;
    },
  };
}
export type SessionRepo = ReturnType<typeof createSessionRepo>;
