import { and, desc, eq, lt } from 'drizzle-orm';
import type { Db } from '../db.js';
import { auditLogs } from '../schema/index.js';
import { idsWithin, within } from './filters.js';

export type AuditRow = typeof auditLogs.$inferSelect;

export interface AuditQuery {
  /** undefined = every workspace (operator). */
  workspaceId?: string;
  startTime?: Date;
  endTime?: Date;
  beforeId?: string;
  limit: number;
}

export function createAuditRepo(db: Db) {
  return {
    async insert(row: typeof auditLogs.$inferInsert): Promise<void> {
      await db.insert(auditLogs).values(row);
    },
    /** Newest first. */
    list(q: AuditQuery): Promise<AuditRow[]> {
      return db
        .select()
        .from(auditLogs)
        .where(
          and(
            q.workspaceId ? eq(auditLogs.workspaceId, q.workspaceId) : undefined,
            within(auditLogs.createdAt, q.startTime, q.endTime),
            idsWithin(auditLogs.id, 'audit', q.startTime, q.endTime),
            q.beforeId ? lt(auditLogs.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(auditLogs.id))
        .limit(q.limit);
    },
  };
}
export type AuditRepo = ReturnType<typeof createAuditRepo>;
