import { sql, type SQL } from 'drizzle-orm';
import { rowsOf, type Db } from '../db.js';

/**
 * The ledger's roll-ups into UTC days and hours (docs/observability.md, "Usage"). A report reads its whole days from `usage_daily`,
 * the whole hours of its first and last day from `usage_hourly`, and raw entries only for the partial hours at its two
 * ends and for entries not rolled up yet: a few thousand rows rather than one per source per meter interval (4.75
 * million for 110 resources over 30 days).
 */

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
const LEVELS = [
  { table: sql.raw('usage_daily'), column: sql.raw('day'), unit: sql.raw(`'day'`), step: sql.raw(`interval '1 day'`) },
  {
    table: sql.raw('usage_hourly'),
    column: sql.raw('hour'),
    unit: sql.raw(`'hour'`),
    step: sql.raw(`interval '1 hour'`),
  },
];

/** An entry's share of [a, b): its quantity pro rata of its time inside (a zero-length entry counts whole at its start). */
const share = (a: SQL, b: SQL) => sql`
  case when ended_at > started_at
    then quantity * greatest(0, extract(epoch from (least(ended_at, ${b}) - greatest(started_at, ${a}))))
                  / extract(epoch from (ended_at - started_at))
    else case when started_at >= ${a} and started_at < ${b} then quantity else 0 end end`;

const at = (d: Date) => sql`${d.toISOString()}::timestamptz`;
const up = (d: Date, unit: number) => new Date(Math.ceil(d.getTime() / unit) * unit);
const down = (d: Date, unit: number) => new Date(Math.floor(d.getTime() / unit) * unit);

/** Entries overlapping [a, b) (a zero-length one when it sits inside), with their share of it. */
const rawShare = (scope: SQL, a: Date, b: Date, extra: SQL = sql``) => sql`
  select workspace_id, resource_id, kind, plan, ${share(at(a), at(b))} as q
  from usage_entries
  where ${scope} ended_at >= ${at(a)} and started_at < ${at(b)} and (ended_at > ${at(a)} or ended_at = started_at) ${extra}`;

/** Rolled-up sums of one level in [a, b). */
const rolled = (scope: SQL, level: (typeof LEVELS)[number], a: Date, b: Date) => sql`
  select workspace_id, resource_id, kind, plan, quantity as q from ${level.table}
  where ${scope} ${level.column} >= ${at(a)} and ${level.column} < ${at(b)}`;

export interface TotalsQuery {
  /** A SQL condition ending in `and` (or empty): which workspaces. */
  scope: SQL;
  start: Date;
  end: Date;
}

/** Quantities per workspace, resource, kind and plan over [start, end), whole days and hours from the roll-ups. */
export async function usageTotals(db: Db, q: TotalsQuery): Promise<Array<Record<string, unknown>>> {
  const [daily, hourly] = LEVELS as [(typeof LEVELS)[number], (typeof LEVELS)[number]];
  const firstHour = up(q.start, HOUR_MS);
  const lastHour = down(q.end, HOUR_MS);
  if (firstHour >= lastHour) return sumOf(db, [rawShare(q.scope, q.start, q.end)]);
  // An entry not rolled up yet counts once, with its share of the whole period (exact when it lies inside);
  // a rolled-up one is in its days and hours, and its share of the partial hours at either end comes from the ledger.
  // The mark is read first, in the same snapshot, so the planner sees a number (an index walk over the few new ids).
  return db.transaction(
    async (tx) => {
      const [row] = rowsOf(await tx.execute(sql`select last_id from usage_rollups where name = 'hourly'`));
      const mark = Number(row?.last_id ?? 0);
      const parts = [rawShare(q.scope, q.start, q.end, sql`and id > ${mark}`)];
      const firstDay = up(firstHour, DAY_MS);
      const lastDay = down(lastHour, DAY_MS);
      if (firstDay < lastDay) {
        parts.push(rolled(q.scope, daily, firstDay, lastDay));
        if (firstHour < firstDay) parts.push(rolled(q.scope, hourly, firstHour, firstDay));
        if (lastDay < lastHour) parts.push(rolled(q.scope, hourly, lastDay, lastHour));
      } else {
        parts.push(rolled(q.scope, hourly, firstHour, lastHour));
      }
      if (q.start < firstHour) parts.push(rawShare(q.scope, q.start, firstHour, sql`and id <= ${mark}`));
      if (lastHour < q.end) parts.push(rawShare(q.scope, lastHour, q.end, sql`and id <= ${mark}`));
      return sumOf(tx as unknown as Db, parts);
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

async function sumOf(db: Db, parts: SQL[]): Promise<Array<Record<string, unknown>>> {
  const result = await db.execute(sql`
    select workspace_id, resource_id, kind, plan, sum(q)::float8 as quantity
    from (${sql.join(parts, sql` union all `)}) parts
    group by workspace_id, resource_id, kind, plan
    order by workspace_id, resource_id, kind, plan`);
  return rowsOf(result);
}

/**
 * Adds the ledger's entries after the last roll-up to their UTC days and hours, up to `maxRows` entries and only
 * entries older than `lagSeconds` (a meter pass commits within it: an entry is never skipped because a later id
 * committed first). Both levels and the new mark commit together. Returns how many entries were rolled up.
 */
export async function rollUpUsage(db: Db, opts: { maxRows: number; lagSeconds: number }): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`insert into usage_rollups (name, last_id) values ('hourly', 0) on conflict do nothing`);
    const [state] = rowsOf(await tx.execute(sql`select last_id from usage_rollups where name = 'hourly' for update`));
    const from = Number(state!.last_id);
    const [bound] = rowsOf(
      await tx.execute(sql`
        with batch as (select id, created_at from usage_entries where id > ${from} order by id limit ${opts.maxRows})
        select coalesce(
          (select min(id) - 1 from batch where created_at >= now() - make_interval(secs => ${opts.lagSeconds})),
          (select max(id) from batch)) as up_to`),
    );
    const upTo = bound?.up_to === null || bound?.up_to === undefined ? from : Number(bound.up_to);
    if (upTo <= from) return 0;
    for (const level of LEVELS)
      await tx.execute(sql`
        insert into ${level.table} (workspace_id, resource_id, kind, plan, ${level.column}, quantity)
        select workspace_id, resource_id, kind, plan, t, sum(${share(sql`t`, sql`t + ${level.step}`)})
        from usage_entries
        cross join lateral generate_series(
          date_trunc(${level.unit}, started_at, 'UTC'),
          date_trunc(${level.unit}, greatest(started_at, ended_at - interval '1 microsecond'), 'UTC'),
          ${level.step}) as t
        where id > ${from} and id <= ${upTo}
        group by workspace_id, resource_id, kind, plan, t
        on conflict (workspace_id, ${level.column}, resource_id, kind, plan)
        do update set quantity = ${level.table}.quantity + excluded.quantity`);
    await tx.execute(sql`update usage_rollups set last_id = ${upTo} where name = 'hourly'`);
    return upTo - from;
  });
}
