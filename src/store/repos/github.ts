import { eq, lt } from 'drizzle-orm';
import type { Db } from '../db.js';
import { githubDeliveries, githubInstallations } from '../schema/index.js';

export type GitHubInstallationRow = typeof githubInstallations.$inferSelect;

/** GitHub App installations and the webhook deliveries already handled. */
export function createGitHubRepo(db: Db) {
  return {
    async installation(installationId: string): Promise<GitHubInstallationRow | undefined> {
      const [row] = await db
        .select()
        .from(githubInstallations)
        .where(eq(githubInstallations.installationId, installationId))
        .limit(1);
      return row;
    },
    async installationOf(workspaceId: string): Promise<GitHubInstallationRow | undefined> {
      const [row] = await db
        .select()
        .from(githubInstallations)
        .where(eq(githubInstallations.workspaceId, workspaceId))
        .limit(1);
      return row;
    },
    /**
     * Links an installation to a workspace (replacing the workspace's earlier one). False when the installation is
     * already another workspace's: the conflict update only applies to the same workspace's row.
     */
    async link(row: typeof githubInstallations.$inferInsert): Promise<boolean> {
      return db.transaction(async (tx) => {
        const [held] = await tx
          .select()
          .from(githubInstallations)
          .where(eq(githubInstallations.installationId, row.installationId))
          .for('update');
        if (held && held.workspaceId !== row.workspaceId) return false;
        await tx.delete(githubInstallations).where(eq(githubInstallations.workspaceId, row.workspaceId));
        await tx.insert(githubInstallations).values(row);
        return true;
      });
    },
    async update(
      installationId: string,
      patch: Partial<Pick<GitHubInstallationRow, 'repositorySelection' | 'suspended'>>,
    ) {
      await db.update(githubInstallations).set(patch).where(eq(githubInstallations.installationId, installationId));
    },
    async unlink(installationId: string): Promise<void> {
      await db.delete(githubInstallations).where(eq(githubInstallations.installationId, installationId));
    },
    /** Records a delivery id; false when it was seen before. */
    async firstDelivery(id: string): Promise<boolean> {
      const rows = await db
        .insert(githubDeliveries)
        .values({ id })
        .onConflictDoNothing()
        .returning({ id: githubDeliveries.id });
      return rows.length > 0;
    },
    async forgetDelivery(id: string): Promise<void> {
      await db.delete(githubDeliveries).where(eq(githubDeliveries.id, id));
    },
    async deleteDeliveriesBefore(cutoff: Date): Promise<number> {
      return (await db.delete(githubDeliveries).where(lt(githubDeliveries.receivedAt, cutoff)).returning()).length;
    },
  };
}
export type GitHubRepo = ReturnType<typeof createGitHubRepo>;
