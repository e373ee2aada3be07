import type { UsageFigures, UsageReport } from '../../observability/usage/report.js';
import type { ServiceType } from '../../model/enums.js';
import type { PricedResources } from '../../store/repos/billing.js';
import type { PriceCatalog } from './catalog.js';

const MONTH_SECONDS = 30n * 86_400n;
/**
 * Services whose instances run all the time, as Render bills them: a cron job costs only while a run lasts (its runs so
 * far are in costSoFar, its next ones cannot be known), and a static site has no instances.
 */
const ALWAYS_ON: ReadonlySet<ServiceType> = new Set(['web_service', 'private_service', 'background_worker']);

/** round(numerator / denominator) for non-negative integers, in integer arithmetic. */
const roundDiv = (numerator: bigint, denominator: bigint) =>
  Number((numerator * 2n + denominator) / (2n * denominator));
/** A usage figure back to the whole unit it was metered in (seconds, bytes): the ledger's unit, an integer. */
const whole = (value: number, per: number) => BigInt(Math.round(value * per));

export interface LineItem {
  item: 'instance_hours' | 'datastore_hours' | 'build_minutes' | 'bandwidth';
  plan?: string;
  /** As GET /v1/usage reports it for the same period: hours, minutes or decimal GB. */
  quantity: number;
  unit: 'hours' | 'minutes' | 'GB';
  /** Billable beyond what the plan includes (builds, bandwidth). */
  billableQuantity?: number;
  /** Minor units of the catalog's currency. */
  amount: number;
  /** The price it was charged at, in minor units: per month (30 days), or per 1,000 minutes, or per GB. */
  unitPrice: number;
}

export interface CostEstimate {
  ownerId: string;
  currency: string;
  catalogVersion: string;
  startTime: string;
  endTime: string;
  periodEnd: string;
  /** Minor units: metered so far in the period. */
  costSoFar: number;
  /** costSoFar plus what the resources running now add by periodEnd (`projection`). */
  projectedCost: number;
  resources: Array<{ resourceId: string; type: string; name?: string; amount: number; lineItems: LineItem[] }>;
  /** Workspace-wide items: build minutes and bandwidth beyond what is included. */
  lineItems: LineItem[];
  projection: ProjectedItem[];
}

/** A resource running now, and what it costs from endTime to periodEnd if it keeps running as it is. */
export interface ProjectedItem {
  resourceId: string;
  type: 'service' | 'postgres' | 'key_value';
  name: string;
  plan: string;
  /** Instances billed: the service's numInstances; 1 for a datastore. */
  instances: number;
  /** Per instance per 30-day month, minor units. */
  unitPrice: number;
  amount: number;
}

/**
 * What each resource running now costs from `now` to `end` at its plan's price, prorated as the meter bills (per
 * instance, a 30-day month's price per second): services that are not suspended and whose type runs all the time, at
 * numInstances (Slipway has no autoscaling: the supervisor keeps that many running), and datastores that are not
 * suspended. Free plans run at 0; a plan the catalog does not price is free, as in costSoFar.
 */
function project(running: PricedResources, catalog: PriceCatalog, period: { now: Date; end: Date }): ProjectedItem[] {
  const rest = BigInt(Math.max(0, period.end.getTime() - period.now.getTime()));
  const item = (i: Omit<ProjectedItem, 'amount'>): ProjectedItem => ({
    ...i,
    amount: roundDiv(BigInt(i.unitPrice) * BigInt(i.instances) * rest, MONTH_SECONDS * 1000n),
  });
  return [
    ...running.services
      .filter((s) => !s.suspended && ALWAYS_ON.has(s.type))
      .map((s) =>
        item({
          resourceId: s.id,
          type: 'service',
          name: s.name,
          plan: s.plan,
          instances: s.numInstances,
          unitPrice: catalog.services[s.plan] ?? 0,
        }),
      ),
    ...running.datastores
      .filter((d) => !d.suspended)
      .map((d) =>
        item({
          resourceId: d.id,
          type: d.kind === 'postgres' ? 'postgres' : 'key_value',
          name: d.name,
          plan: d.plan,
          instances: 1,
          unitPrice: (d.kind === 'postgres' ? catalog.postgres : catalog.keyValue)[d.plan] ?? 0,
        }),
      ),
  ];
}

function byPlan(figures: Record<string, number>, prices: Record<string, number>, item: LineItem['item']): LineItem[] {
  return Object.entries(figures).map(([plan, hours]) => {
    const unitPrice = prices[plan] ?? 0; // a plan the catalog does not price is free (docs/observability.md, "Cost", says so)
    const amount = roundDiv(whole(hours, 3600) * BigInt(unitPrice), MONTH_SECONDS);
    return { item, plan, quantity: hours, unit: 'hours', amount, unitPrice };
  });
}

/**
 * The cost of a workspace's usage report, in integer minor units. Quantities are the report's own figures; each amount
 * is computed from the whole seconds (or bytes, or minutes) they stand for, times an integer price, in integers.
 * `running`: the workspace's resources as configured now, for the projection (none for a closed period).
 */
export function estimateCost(
  report: UsageReport,
  ownerId: string,
  catalog: PriceCatalog,
  period: { start: Date; now: Date; end: Date },
  running: PricedResources = { services: [], datastores: [] },
): CostEstimate {
  const resources = report.resources.map((r) => {
    const lineItems =
      r.type === 'service'
        ? byPlan(r.instanceHoursByPlan, catalog.services, 'instance_hours')
        : byPlan(
            r.datastoreHoursByPlan,
            r.type === 'postgres' ? catalog.postgres : catalog.keyValue,
            'datastore_hours',
          );
    const amount = lineItems.reduce((sum, l) => sum + l.amount, 0);
    return { resourceId: r.resourceId, type: r.type, ...(r.name ? { name: r.name } : {}), amount, lineItems };
  });
  const totals: UsageFigures | undefined = report.workspaces.find((w) => w.ownerId === ownerId);
  const minutes = totals?.buildMinutes ?? 0;
  const billableSeconds = whole(minutes, 60) - BigInt(catalog.buildMinutes.includedPerMonth) * 60n;
  const bytes = BigInt(totals?.bandwidthBytes ?? 0);
  const billableBytes = bytes - BigInt(catalog.bandwidth.includedGBPerMonth) * 1_000_000_000n;
  const lineItems: LineItem[] = [
    {
      item: 'build_minutes',
      quantity: minutes,
      unit: 'minutes',
      billableQuantity: billableSeconds > 0n ? Number(billableSeconds) / 60 : 0,
      amount: billableSeconds > 0n ? roundDiv(billableSeconds * BigInt(catalog.buildMinutes.perThousand), 60_000n) : 0,
      unitPrice: catalog.buildMinutes.perThousand,
    },
    {
      item: 'bandwidth',
      quantity: totals?.bandwidthGB ?? 0,
      unit: 'GB',
      billableQuantity: billableBytes > 0n ? Number(billableBytes) / 1e9 : 0,
      amount: billableBytes > 0n ? roundDiv(billableBytes * BigInt(catalog.bandwidth.perGB), 1_000_000_000n) : 0,
      unitPrice: catalog.bandwidth.perGB,
    },
  ];
  const costSoFar = [...resources, ...lineItems].reduce((sum, x) => sum + x.amount, 0);
  const projection = project(running, catalog, period);
  return {
    ownerId,
    currency: catalog.currency,
    catalogVersion: catalog.version,
    startTime: report.startTime,
    endTime: report.endTime,
    periodEnd: period.end.toISOString(),
    costSoFar,
    projectedCost: projection.reduce((sum, p) => sum + p.amount, costSoFar),
    resources,
    lineItems,
    projection,
  };
}
