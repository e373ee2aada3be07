import type { LogRepo } from '../../store/repos/logs.js';

export interface LogRetention {
  retentionDays: number;
  maxBytesPerService: number;
}

/**
 * Deletes entries older than the retention period, then each service's oldest beyond its size
 * cap; then refreshes the planner's statistics of the table (PGlite has no autovacuum: without
 * them, queries on millions of lines stop using the right index).
 */
export async function runLogRetention(
  repo: Pick<LogRepo, 'deleteOlderThan' | 'deleteBeyondCap' | 'deleteOrphanOffsets' | 'analyze'>,
  settings: LogRetention,
  now = new Date(),
) {
  const expired = await repo.deleteOlderThan(new Date(now.getTime() - settings.retentionDays * 86_400_000));
  const overCap = await repo.deleteBeyondCap(settings.maxBytesPerService);
  await repo.deleteOrphanOffsets();
  await repo.analyze();
  return { expired, overCap };
}
