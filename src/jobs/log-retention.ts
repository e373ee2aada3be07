import type PgBoss from 'pg-boss';
import { runLogRetention, type LogRetention } from '../observability/logs/retention.js';
import type { LogRepo } from '../store/repos/logs.js';

export const LOG_RETENTION_QUEUE = 'log-retention';

/** Registers the log retention job and runs it every 10 minutes (pg-boss runs it once across processes). */
export async function scheduleLogRetention(boss: PgBoss, repo: LogRepo, settings: LogRetention) {
  await boss.createQueue(LOG_RETENTION_QUEUE);
  await boss.work(LOG_RETENTION_QUEUE, async () => runLogRetention(repo, settings));
  await boss.schedule(LOG_RETENTION_QUEUE, '*/10 * * * *');
}
