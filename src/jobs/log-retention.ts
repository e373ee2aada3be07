import type PgBoss from 'pg-boss';
import { runLogRetention, type LogRetention } from '../observability/logs/retention.js';
import type { LogRepo } from '../store/repos/logs.js';
import { schedulePeriodic } from './queue.js';

const LOG_RETENTION_QUEUE = 'log-retention';

/** Registers the log retention job and runs it every 10 minutes (pg-boss runs it once across processes). */
export function scheduleLogRetention(boss: PgBoss, repo: LogRepo, settings: LogRetention) {
  return schedulePeriodic(boss, LOG_RETENTION_QUEUE, '*/10 * * * *', () => runLogRetention(repo, settings));
}
