import { eq } from 'drizzle-orm';
import type { Db } from '../db.js';
import { users } from '../schema/index.js';

export type UserRow = typeof users.$inferSelect;

export function createUserRepo(db: Db) {
  return {
    async insert(row: typeof users.$inferInsert): Promise<UserRow> {
      const [user] = await db.insert(users).values(row).returning();
      return user!;
    },
    async get(id: string): Promise<UserRow | undefined> {
      const [user] = await db.select().from(users).where(eq(users.id, id)).limit(1);
      return user;
    },
    async findByEmail(email: string): Promise<UserRow | undefined> {
      const [user] = await db.select().from(users).where(eq(users.email, email)).limit(1);
      return user;
    },
  };
}
export type UserRepo = ReturnType<typeof createUserRepo>;
