import { and, asc, count, eq, gt, inArray, sql } from 'drizzle-orm';
import { lazy } from '../../lib/lazy.js';
import type { Db } from '../db.js';
import { memberships, users, workspaces } from '../schema/index.js';

export type Role = (typeof memberships.$inferSelect)['role'];
export type WorkspaceRow = typeof workspaces.$inferSelect & { ownerEmail: string };
export type MemberRow = { userId: string; name: string; email: string; role: Role; createdAt: Date };

const workspaceColumns = {
  id: workspaces.id,
  name: workspaces.name,
  ownerUserId: workspaces.ownerUserId,
  createdAt: workspaces.createdAt,
  ownerEmail: users.email,
};

export function createWorkspaceRepo(db: Db) {
  // Runs on every workspace-scoped request: built once, executed as a named prepared statement.
  const roleQuery = lazy(() =>
    db
      .select({ role: memberships.role })
      .from(memberships)
      .where(
        and(
          eq(memberships.workspaceId, sql.placeholder('workspaceId')),
          eq(memberships.userId, sql.placeholder('userId')),
        ),
      )
      .limit(1)
      .prepare('membership_role'),
  );
  const selectWorkspaces = () =>
    db.select(workspaceColumns).from(workspaces).innerJoin(users, eq(users.id, workspaces.ownerUserId));
  return {
    async insert(row: typeof workspaces.$inferInsert): Promise<void> {
      await db.insert(workspaces).values(row);
    },
    async get(id: string): Promise<WorkspaceRow | undefined> {
      const [row] = await selectWorkspaces().where(eq(workspaces.id, id)).limit(1);
      return row;
    },
    /** Workspaces in id order after `afterId`; restricted to `onlyIds` unless undefined (operator). */
    list(opts: { onlyIds?: string[]; afterId?: string; limit: number }): Promise<WorkspaceRow[]> {
      const conditions = [
        opts.onlyIds ? inArray(workspaces.id, opts.onlyIds) : undefined,
        opts.afterId ? gt(workspaces.id, opts.afterId) : undefined,
      ];
      return selectWorkspaces()
        .where(and(...conditions))
        .orderBy(asc(workspaces.id))
        .limit(opts.limit);
    },
    /** In a transaction: holds the workspace's memberships until it ends, so owner counts and role changes go in turn. */
    async lockMembers(workspaceId: string): Promise<void> {
      await db
        .select({ userId: memberships.userId })
        .from(memberships)
        .where(eq(memberships.workspaceId, workspaceId))
        .for('update');
    },
    async roleOf(workspaceId: string, userId: string): Promise<Role | undefined> {
      const [row] = await roleQuery().execute({ workspaceId, userId });
      return row?.role;
    },
    async workspaceIdsOf(userId: string): Promise<string[]> {
      const rows = await db
        .select({ id: memberships.workspaceId })
        .from(memberships)
        .where(eq(memberships.userId, userId));
      return rows.map((r) => r.id);
    },
    listMembers(
      workspaceId: string,
      opts: { afterUserId?: string; onlyUserId?: string; limit: number },
    ): Promise<MemberRow[]> {
      return db
        .select({
          userId: users.id,
          name: users.name,
          email: users.email,
          role: memberships.role,
          createdAt: memberships.createdAt,
        })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(
          and(
            eq(memberships.workspaceId, workspaceId),
            opts.afterUserId ? gt(users.id, opts.afterUserId) : undefined,
            opts.onlyUserId ? eq(users.id, opts.onlyUserId) : undefined,
          ),
        )
        .orderBy(asc(users.id))
        .limit(opts.limit);
    },
    /** Adds the member, or changes the role of an existing one. */
    async putMember(workspaceId: string, userId: string, role: Role): Promise<void> {
      await db
        .insert(memberships)
        .values({ workspaceId, userId, role })
        .onConflictDoUpdate({ target: [memberships.workspaceId, memberships.userId], set: { role } });
    },
    async removeMember(workspaceId: string, userId: string): Promise<void> {
      await db.delete(memberships).where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.userId, userId)));
    },
    async countOwners(workspaceId: string): Promise<number> {
      const [row] = await db
        .select({ n: count() })
        .from(memberships)
        .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.role, 'owner')));
      return Number(row?.n ?? 0);
    },
  };
}
export type WorkspaceRepo = ReturnType<typeof createWorkspaceRepo>;
