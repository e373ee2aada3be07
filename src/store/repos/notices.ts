import { sql } from 'drizzle-orm';
import type { Db } from '../db.js';

export function createNoticeRepo(db: Db) {
  return {
    /**
     * NOTIFY every connection that LISTENs on `channel` (src/store/notify.ts). Inside a transaction,
     * Postgres delivers it at commit and drops it on rollback; PGlite (one process) has no listener.
     */
    async send(channel: string, payload: string): Promise<void> {
      await db.execute(sql`select pg_notify(${channel}, ${payload})`);
    },
  };
}
export type NoticeRepo = ReturnType<typeof createNoticeRepo>;
