import type { UsageRepo } from '../../store/repos/usage.js';
import { createUsageMeter, type MeterDeps } from './meter.js';
import { createUsageReports } from './report.js';

export { createUsageMeter, type UsageMeter } from './meter.js';
export { createUsageReports, type UsageReport, type UsageReports, type UsageFigures } from './report.js';

/** The usage ledger for the composition root: the meter (ticks, builds, router bytes) and the reports behind GET /v1/usage. */
export function createUsage(deps: Omit<MeterDeps, 'repo'> & { repo: UsageRepo }) {
  return { meter: createUsageMeter(deps), reports: createUsageReports(deps.repo) };
}
