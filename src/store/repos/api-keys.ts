import { and, desc, eq, isNull, lt, sql } from 'drizzle-orm';
import { lazy } from '../../lib/lazy.js';
import type { Db } from '../db.js';
import { apiKeys, users } from '../schema/index.js';
import type { UserRow } from './users.js';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export function createApiKeyRepo(db: Db) {
  // Runs on every API-key request: built once, executed as a named prepared statement.
  const byTokenHash = lazy(() =>
    db
      .select({ apiKey: apiKeys, user: users })
      .from(apiKeys)
      .innerJoin(users, eq(users.id, apiKeys.userId))
      .where(eq(apiKeys.tokenHash, sql.placeholder('tokenHash')))
      .limit(1)
      .prepare('api_key_by_token_hash'),
  );
  return {
    async insert(row: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
      const [key] = await db.insert(apiKeys).values(row).returning();
      return key!;
    },
    /** The key and its user in one query. */
    async findByTokenHash(tokenHash: string): Promise<{ apiKey: ApiKeyRow; user: UserRow } | undefined> {
      const [row] = await byTokenHash().execute({ tokenHash });
      return row;
    },
    async get(id: string): Promise<ApiKeyRow | undefined> {
      const [row] = await db
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
        .limit(1);
      return row;
    },
    /** Active keys of a workspace, newest first. */
    list(workspaceId: string, opts: { beforeId?: string; limit: number }): Promise<ApiKeyRow[]> {
      return db
        .select()
        .from(apiKeys)
        .where(
          and(
            eq(apiKeys.workspaceId, workspaceId),
            isNull(apiKeys.revokedAt),
            opts.beforeId ? lt(apiKeys.id, opts.beforeId) : undefined,
          ),
        )
        .orderBy(desc(apiKeys.id))
        .limit(opts.limit);
    },
    async revoke(id: string, now: Date): Promise<void> {
      await db.update(apiKeys).set({ revokedAt: now }).where(eq(apiKeys.id, id));
    },
    async touch(id: string, now: Date): Promise<void> {
      await db.update(apiKeys).set({ lastUsedAt: now }).where(eq(apiKeys.id, id));
    },
  };
}
export type ApiKeyRepo = ReturnType<typeof createApiKeyRepo>;
