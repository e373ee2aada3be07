import type { LogRepo } from '../../store/repos/logs.js';

export interface LogRetention {
  retentionDays: number;
  maxBytesPerService: number;
}

/** Deletes entries older than the retention period, then each service's oldest beyond its size cap. */
export async function runLogRetention(repo: Pick<LogRepo, 'deleteOlderThan' | 'deleteBeyondCap' | 'deleteOrphanOffsets'>, settings: LogRetention, now = new Date()) {
  const expired = await repo.deleteOlderThan(new Date(now.getTime() - settings.retentionDays * 86_400_000));
  const overCap = await repo.deleteBeyondCap(settings.maxBytesPerService);
  await repo.deleteOrphanOffsets();
  return { expired, overCap };
}
