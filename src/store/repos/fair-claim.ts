import { sql, type SQL } from 'drizzle-orm';

// The outboxes' claims (webhooks', notifications') share their turns and their locking: repos/webhooks.ts `claim`.

/** Sends under way by key (a target, a workspace), as the JSON a claim reads them from (`jsonb_each_text`). */
export const busyJson = (counts: ReadonlyMap<string, number>) => JSON.stringify(Object.fromEntries(counts));

/**
 * The CTEs `turns` and `chosen(id)`: `candidates(id, next_attempt_at, workspace_id)` numbered per workspace after its
 * sends under way (`busy_workspace(workspace_id, n)`), so every workspace's first turn goes before anyone's second, up
 * to `perWorkspace`, at most `limit` rows.
 */
export const fairTurns = (perWorkspace: number, limit: number): SQL => sql`
  turns as (
    select c.id, c.next_attempt_at, coalesce(bw.n, 0)
      + row_number() over (partition by c.workspace_id order by c.next_attempt_at, c.id) as turn
    from candidates c left join busy_workspace bw on bw.workspace_id = c.workspace_id
  ), chosen as (
    select id from turns where turn <= ${perWorkspace}::int order by turn, next_attempt_at, id limit ${limit}
  )`;

/**
 * The chosen rows of `table` still pending and unleased, locked (`skip locked`: a row another process took meanwhile
 * is left to it, and the lease is checked again under the lock).
 */
export const lockChosen = (table: string): SQL => sql`
  select d2.id from ${sql.identifier(table)} d2
  where d2.id in (select id from chosen) and d2.status = 'pending'
    and (d2.claimed_until is null or d2.claimed_until < now())
  for update of d2 skip locked`;

/** The lease a claim sets: `claimed_until = now() + <this>`. */
export const leaseFor = (ms: number): SQL => sql`${`${ms} milliseconds`}::interval`;
