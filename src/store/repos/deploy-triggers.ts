import { and, eq, isNotNull, sql } from 'drizzle-orm';
import type { Db } from '../db.js';
import { deployHooks, gitHeads, services } from '../schema/index.js';

export type DeployHookRow = typeof deployHooks.$inferSelect;
export type GitHeadRow = typeof gitHeads.$inferSelect;

/** What starts deploys without a user at the API: deploy hooks, and the git poller's record of each branch's head. */
export function createDeployTriggerRepo(db: Db) {
  return {
    async hookOf(serviceId: string): Promise<DeployHookRow | undefined> {
      const [row] = await db.select().from(deployHooks).where(eq(deployHooks.serviceId, serviceId)).limit(1);
      return row;
    },
    /** Sets the service's hook key (a new one replaces the old at once). */
    async putHook(serviceId: string, keyHash: string, keyHint: string): Promise<DeployHookRow> {
      const [row] = await db
        .insert(deployHooks)
        .values({ serviceId, keyHash, keyHint })
        .onConflictDoUpdate({ target: deployHooks.serviceId, set: { keyHash, keyHint, createdAt: new Date() } })
        .returning();
      return row!;
    },
    async removeHook(serviceId: string): Promise<boolean> {
      return (await db.delete(deployHooks).where(eq(deployHooks.serviceId, serviceId)).returning()).length > 0;
    },

    /** A workspace's git services (a push is matched against them). */
    withRepo(workspaceId: string) {
      return db
        .select()
        .from(services)
        .where(and(eq(services.workspaceId, workspaceId), isNotNull(services.repo)));
    },
    /** Git services that deploy new commits: autoDeploy on, not suspended by their user. */
    pollable() {
      return db
        .select({ id: services.id, workspaceId: services.workspaceId, repo: services.repo, branch: services.branch })
        .from(services)
        .where(
          and(
            isNotNull(services.repo),
            eq(services.autoDeploy, 'yes'),
            // Suspended by its user: no. Stopped by the supervisor for crash-looping: yes, the fix must deploy.
            sql`not (${services.suspenders} ? 'user')`,
          ),
        );
    },
    async headOf(serviceId: string): Promise<GitHeadRow | undefined> {
      const [row] = await db.select().from(gitHeads).where(eq(gitHeads.serviceId, serviceId)).limit(1);
      return row;
    },
    /**
     * Moves the recorded head from `from` (undefined: no row yet) to `to`, compare-and-set: false when another
     * poller (another process) moved it first, so one commit starts one deploy.
     */
    async moveHead(serviceId: string, from: GitHeadRow | undefined, to: { source: string; commitId: string }) {
      if (!from) {
        const rows = await db
          .insert(gitHeads)
          .values({ serviceId, ...to })
          .onConflictDoNothing()
          .returning({ id: gitHeads.serviceId });
        return rows.length > 0;
      }
      const rows = await db
        .update(gitHeads)
        .set({ ...to, checkedAt: new Date() })
        .where(
          and(
            eq(gitHeads.serviceId, serviceId),
            eq(gitHeads.source, from.source),
            eq(gitHeads.commitId, from.commitId),
          ),
        )
        .returning({ id: gitHeads.serviceId });
      return rows.length > 0;
    },
  };
}
export type DeployTriggerRepo = ReturnType<typeof createDeployTriggerRepo>;
