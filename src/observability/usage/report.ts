import type { UsageRepo, UsageTotalRow } from '../../store/repos/usage.js';

/** Usage figures of a workspace, a resource, or everything in the answer. */
export interface UsageFigures {
  instanceHours: number;
  instanceHoursByPlan: Record<string, number>;
  buildMinutes: number;
  buildMinutesByPlan: Record<string, number>;
  bandwidthBytes: number;
  /** Decimal gigabytes (10^9 bytes). */
  bandwidthGB: number;
  datastoreHours: number;
  datastoreHoursByPlan: Record<string, number>;
  /** Services' disk use now (artifacts, uploads, build disk; services.disk_bytes), whatever the period. */
  diskBytes: number;
}

export type ResourceType = 'service' | 'postgres' | 'key_value';

export interface UsageReport {
  startTime: string;
  endTime: string;
  totals: UsageFigures;
  workspaces: Array<{ ownerId: string } & UsageFigures>;
  resources: Array<{ resourceId: string; ownerId: string; type: ResourceType; name?: string } & UsageFigures>;
}

const empty = (): UsageFigures => ({
  instanceHours: 0,
  instanceHoursByPlan: {},
  buildMinutes: 0,
  buildMinutesByPlan: {},
  bandwidthBytes: 0,
  bandwidthGB: 0,
  datastoreHours: 0,
  datastoreHoursByPlan: {},
  diskBytes: 0,
});

const typeOf = (resourceId: string): ResourceType =>
  resourceId.startsWith('dpg-') ? 'postgres' : resourceId.startsWith('red-') ? 'key_value' : 'service';

function add(f: UsageFigures, row: UsageTotalRow) {
  const q = row.quantity;
  switch (row.kind) {
    case 'instance_seconds':
      f.instanceHours += q / 3600;
      f.instanceHoursByPlan[row.plan] = (f.instanceHoursByPlan[row.plan] ?? 0) + q / 3600;
      break;
    case 'build_seconds':
      f.buildMinutes += q / 60;
      f.buildMinutesByPlan[row.plan] = (f.buildMinutesByPlan[row.plan] ?? 0) + q / 60;
      break;
    case 'bandwidth_bytes':
      f.bandwidthBytes += q;
      f.bandwidthGB = f.bandwidthBytes / 1e9;
      break;
    case 'datastore_seconds':
      f.datastoreHours += q / 3600;
      f.datastoreHoursByPlan[row.plan] = (f.datastoreHoursByPlan[row.plan] ?? 0) + q / 3600;
      break;
  }
}

/** Totals of the ledger over a period, per workspace and per resource (GET /v1/usage). */
export function createUsageReports(repo: Pick<UsageRepo, 'totals' | 'names' | 'disk'>) {
  return {
    /** `workspaceIds` undefined: every workspace (the operator). */
    async report(q: { workspaceIds: string[] | undefined; start: Date; end: Date }): Promise<UsageReport> {
      const [rows, disk] = await Promise.all([repo.totals(q), repo.disk(q.workspaceIds)]);
      const totals = empty();
      const workspaces = new Map<string, UsageReport['workspaces'][number]>();
      const resources = new Map<string, UsageReport['resources'][number]>();
      for (const ws of q.workspaceIds ?? []) workspaces.set(ws, { ownerId: ws, ...empty() });
      const figuresOf = (workspaceId: string, resourceId: string) => {
        let w = workspaces.get(workspaceId);
        if (!w) workspaces.set(workspaceId, (w = { ownerId: workspaceId, ...empty() }));
        let r = resources.get(resourceId);
        if (!r)
          resources.set(resourceId, (r = { resourceId, ownerId: workspaceId, type: typeOf(resourceId), ...empty() }));
        return [totals, w, r];
      };
      for (const row of rows) for (const f of figuresOf(row.workspaceId, row.resourceId)) add(f, row);
      for (const s of disk) for (const f of figuresOf(s.workspaceId, s.id)) f.diskBytes += s.diskBytes;
      const names = await repo.names([...resources.keys()]);
      for (const r of resources.values()) {
        const name = names.get(r.resourceId);
        if (name !== undefined) r.name = name;
      }
      return {
        startTime: q.start.toISOString(),
        endTime: q.end.toISOString(),
        totals,
        workspaces: [...workspaces.values()],
        resources: [...resources.values()],
      };
    },
  };
}
export type UsageReports = ReturnType<typeof createUsageReports>;
