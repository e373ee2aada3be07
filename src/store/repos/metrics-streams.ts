import { eq, sql } from 'drizzle-orm';
import type { Db } from '../db.js';
import { metricsStreams } from '../schema/index.js';

export type MetricsStreamRow = typeof metricsStreams.$inferSelect;
export type MetricsStreamInput = Pick<MetricsStreamRow, 'provider' | 'url' | 'sealedToken'>;

export function createMetricsStreamRepo(db: Db) {
  return {
    get: async (workspaceId: string): Promise<MetricsStreamRow | undefined> =>
      (await db.select().from(metricsStreams).where(eq(metricsStreams.workspaceId, workspaceId)).limit(1))[0],
    /** Creates the workspace's stream or replaces its settings. */
    async put(workspaceId: string, input: MetricsStreamInput): Promise<MetricsStreamRow> {
      const [row] = await db
        .insert(metricsStreams)
        .values({ workspaceId, ...input })
        .onConflictDoUpdate({ target: metricsStreams.workspaceId, set: { ...input, updatedAt: sql`now()` } })
        .returning();
      return row!;
    },
    /** False when there was none. */
    async delete(workspaceId: string): Promise<boolean> {
      const gone = await db.delete(metricsStreams).where(eq(metricsStreams.workspaceId, workspaceId)).returning();
      return gone.length > 0;
    },
    /** Every workspace's stream (one row per workspace at most). */
    all: (): Promise<MetricsStreamRow[]> => db.select().from(metricsStreams),
  };
}
export type MetricsStreamRepo = ReturnType<typeof createMetricsStreamRepo>;
