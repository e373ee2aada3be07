import type { UsageRepo } from '../../store/repos/usage.js';

/** How long GET /status reuses its disk figures: it is public, and they change at deploys only. */
const CACHE_MS = 10_000;

export interface DiskStatus {
  /** Each service's budget (SLIPWAY_SERVICE_DISK_MB): artifacts, uploads and build disk together. */
  serviceBudgetBytes: number;
  /** What all services take, as measured after their last deploy. */
  servicesBytes: number;
  /** Services over their budget even with only the artifacts they need (the live one and a queued rollback's). */
  servicesOverBudget: number;
}

/** The services' disk figures for GET /status (docs/deploys.md, "Artifacts and disk"), computed at most every 10 s. */
export function createDiskStatus(repo: Pick<UsageRepo, 'diskTotals'>, serviceBudgetBytes: number) {
  let cached: { at: number; value: Promise<DiskStatus> } | undefined;
  return function diskStatus(): Promise<DiskStatus> {
    if (!cached || Date.now() - cached.at > CACHE_MS) {
      const value = repo.diskTotals(serviceBudgetBytes).then(({ usedBytes, overBudget }) => ({
        serviceBudgetBytes,
        servicesBytes: usedBytes,
        servicesOverBudget: overBudget,
      }));
      cached = { at: Date.now(), value };
      value.catch(() => (cached = undefined)); // a store that was down is asked again next time
    }
    return cached.value;
  };
}
