import { and, desc, eq, inArray, lt, ne, sql } from 'drizzle-orm';
import type { Db } from '../db.js';
import { busyJson, fairTurns, leaseFor, lockChosen } from './fair-claim.js';
import { rowsOf } from '../db.js';
import { webhookAttempts, webhookDeliveries, webhooks } from '../schema/index.js';
import { idsWithin, within, type ListWindow } from './filters.js';

export type WebhookRow = typeof webhooks.$inferSelect;
export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect;
export interface WebhookQuery extends ListWindow {
  workspaceIds?: string[];
}
export interface AttemptQuery {
  sentBefore?: Date;
  sentAfter?: Date;
  beforeId?: string;
  limit: number;
}
/** A claimed delivery and what sending it needs (its webhook's URL and sealed secrets). */
export interface ClaimedDelivery {
  id: number;
  webhookId: string;
  workspaceId: string;
  /** In a failing streak: its webhook sends `perFailingWebhook` at a time. */
  failing: boolean;
  eventId: string;
  eventType: string;
  payload: string;
  attempts: number;
  createdAt: Date;
  webhook: Pick<WebhookRow, 'url' | 'sealedSecret' | 'sealedPreviousSecret' | 'previousSecretExpiresAt'>;
}
/** A claim: how many rows at most, the limits, and this process's sends under way that count against them. */
export interface ClaimQuery {
  limit: number;
  leaseMs: number;
  perWebhook: number;
  perFailingWebhook: number;
  perWorkspace: number;
  /** Sends under way per webhook and per workspace. */
  busyWebhooks: ReadonlyMap<string, number>;
  busyWorkspaces: ReadonlyMap<string, number>;
}
const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));

export function createWebhookRepo(db: Db) {
  return {
    async insert(row: typeof webhooks.$inferInsert): Promise<WebhookRow> {
      const [inserted] = await db.insert(webhooks).values(row).returning();
      return inserted!;
    },
    async countIn(workspaceId: string): Promise<number> {
      const [row] = await db
        .select({ n: sql<number>`count(*)::int` })
        .from(webhooks)
        .where(eq(webhooks.workspaceId, workspaceId));
      return Number(row?.n ?? 0);
    },
    async get(id: string): Promise<WebhookRow | undefined> {
      const [row] = await db.select().from(webhooks).where(eq(webhooks.id, id)).limit(1);
      return row;
    },
    list(q: WebhookQuery): Promise<WebhookRow[]> {
      return db
        .select()
        .from(webhooks)
        .where(
          and(
            q.workspaceIds ? inArray(webhooks.workspaceId, q.workspaceIds) : undefined,
            within(webhooks.createdAt, q.createdAfter, q.createdBefore),
            within(webhooks.updatedAt, q.updatedAfter, q.updatedBefore),
            q.beforeId ? lt(webhooks.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(webhooks.id))
        .limit(q.limit);
    },
    async update(id: string, patch: Partial<typeof webhooks.$inferInsert>): Promise<WebhookRow | undefined> {
      const [row] = await db
        .update(webhooks)
        .set({ ...patch, updatedAt: new Date() })
        .where(eq(webhooks.id, id))
        .returning();
      return row;
    },
    async delete(id: string): Promise<void> {
      await db.delete(webhooks).where(eq(webhooks.id, id));
    },
    /**
     * A test ping (a delivery outside the event feed). The webhook keeps at most `keep` of them pending: the oldest
     * past that which are not being sent are dropped, so pings at a dead endpoint cannot pile up.
     */
    async enqueueTest(row: { webhookId: string; eventId: string; payload: string }, keep: number): Promise<void> {
      await db.execute(sql`
        with dropped as (
          delete from webhook_deliveries where id in (
            select id from webhook_deliveries
            where webhook_id = ${row.webhookId} and status = 'pending' and event_type = 'webhook_test'
              and (claimed_until is null or claimed_until < now())
            order by id desc offset ${keep - 1}
          )
        )
        insert into webhook_deliveries (webhook_id, event_id, event_type, payload)
        values (${row.webhookId}, ${row.eventId}, 'webhook_test', ${row.payload})`);
    },
    /**
     * Leases due deliveries of enabled webhooks until `leaseMs` from now, up to `limit`, taking turns between
     * workspaces. The webhooks with pending rows are walked on the pending index (a probe each, whatever the backlog);
     * each gives its oldest due rows up to its limit less its sends under way; a workspace's candidates are numbered
     * after its own sends under way, and every workspace's first turn is taken before anyone's second, up to the
     * per-workspace limit. `skip locked`: two processes on one Postgres never claim the same row; a process killed
     * mid-send leaves a lease that expires, and the row is claimed again (at least once).
     */
    async claim(q: ClaimQuery): Promise<ClaimedDelivery[]> {
      const result = await db.execute(sql`
        with recursive pending(webhook_id) as (
          select min(webhook_id) from webhook_deliveries where status = 'pending'
          union all
          select (select min(d.webhook_id) from webhook_deliveries d
            where d.status = 'pending' and d.webhook_id > p.webhook_id)
          from pending p where p.webhook_id is not null
        ), busy_webhook as (
          select key as webhook_id, value::int as n from jsonb_each_text(${busyJson(q.busyWebhooks)}::jsonb)
        ), busy_workspace as (
          select key as workspace_id, value::int as n from jsonb_each_text(${busyJson(q.busyWorkspaces)}::jsonb)
        ), candidates as (
          select c.id, c.next_attempt_at, w.workspace_id
          from pending p join webhooks w on w.id = p.webhook_id and w.enabled
          left join busy_webhook bh on bh.webhook_id = w.id
          cross join lateral (
            select d.id, d.next_attempt_at from webhook_deliveries d
            where d.webhook_id = w.id and d.status = 'pending' and d.next_attempt_at <= now()
              and (d.claimed_until is null or d.claimed_until < now())
            order by d.next_attempt_at, d.id
            limit greatest(0, coalesce(-bh.n, 0)
              + case when w.failing_since is null then ${q.perWebhook}::int else ${q.perFailingWebhook}::int end)
          ) c
        ), ${fairTurns(q.perWorkspace, q.limit)}
        update webhook_deliveries d set claimed_until = now() + ${leaseFor(q.leaseMs)}
        from webhooks w
        where w.id = d.webhook_id and d.id in (
          ${lockChosen('webhook_deliveries')}
        )
        returning d.id, d.webhook_id, d.event_id, d.event_type, d.payload, d.attempts, d.created_at, w.workspace_id,
          w.failing_since, w.url, w.sealed_secret, w.sealed_previous_secret, w.previous_secret_expires_at`);
      return rowsOf(result).map((r) => ({
        id: Number(r.id),
        webhookId: r.webhook_id as string,
        workspaceId: r.workspace_id as string,
        failing: r.failing_since !== null,
        eventId: r.event_id as string,
        eventType: r.event_type as string,
        payload: r.payload as string,
        attempts: Number(r.attempts),
        createdAt: new Date(r.created_at as string),
        webhook: {
          url: r.url as string,
          sealedSecret: r.sealed_secret as string,
          sealedPreviousSecret: (r.sealed_previous_secret as string | null) ?? null,
          previousSecretExpiresAt: dateOrNull(r.previous_secret_expires_at),
        },
      }));
    },
    /** Hands back every lease at once: at boot, when no other process can hold one (PGlite's single writer). */
    async releaseAll(): Promise<void> {
      await db
        .update(webhookDeliveries)
        .set({ claimedUntil: null })
        .where(and(eq(webhookDeliveries.status, 'pending'), sql`${webhookDeliveries.claimedUntil} is not null`));
    },
    /**
     * After an attempt, in one statement: its log entry; the delivery done (`succeeded`/`failed`) or pending again at
     * `nextAttemptAt`; and the webhook's failing streak ended (a success) or started. Answers when the streak started.
     */
    async finish(
      deliveryId: number,
      attempt: WebhookAttemptRow,
      outcome: { status: 'succeeded' | 'failed' } | { status: 'pending'; nextAttemptAt: Date },
    ): Promise<Date | undefined> {
      const ok = outcome.status === 'succeeded';
      const next = outcome.status === 'pending' ? outcome.nextAttemptAt : null;
      const result = await db.execute(sql`
        with a as (
          insert into webhook_attempts
            (id, webhook_id, event_id, event_type, sent_at, status_code, duration_ms, error, response_body)
          values (${attempt.id}, ${attempt.webhookId}, ${attempt.eventId}, ${attempt.eventType}, ${attempt.sentAt},
            ${attempt.statusCode}, ${attempt.durationMs}, ${attempt.error}, ${attempt.responseBody})
        ), d as (
          update webhook_deliveries set status = ${outcome.status}, attempts = attempts + 1, claimed_until = null,
            next_attempt_at = coalesce(${next}::timestamptz, next_attempt_at)
          where id = ${deliveryId}
        )
        update webhooks set failing_since = case when ${ok}::boolean then null else coalesce(failing_since, now()) end
        where id = ${attempt.webhookId} and (not ${ok}::boolean or failing_since is not null)
        returning failing_since`);
      const [row] = rowsOf(result);
      return dateOrNull(row?.failing_since) ?? undefined;
    },
    /** The delivery log of a webhook, newest first. */
    listAttempts(webhookId: string, q: AttemptQuery): Promise<WebhookAttemptRow[]> {
      return db
        .select()
        .from(webhookAttempts)
        .where(
          and(
            eq(webhookAttempts.webhookId, webhookId),
            within(webhookAttempts.sentAt, q.sentAfter, q.sentBefore),
            idsWithin(webhookAttempts.id, 'webhookEvent', q.sentAfter, q.sentBefore),
            q.beforeId ? lt(webhookAttempts.id, q.beforeId) : undefined,
          ),
        )
        .orderBy(desc(webhookAttempts.id))
        .limit(q.limit);
    },
    /** Retention: settled deliveries (their bodies) after `deliveriesBefore`, log entries after `attemptsBefore`. */
    async deleteOld(deliveriesBefore: Date, attemptsBefore: Date): Promise<number> {
      const deliveries = await db
        .delete(webhookDeliveries)
        .where(and(ne(webhookDeliveries.status, 'pending'), lt(webhookDeliveries.createdAt, deliveriesBefore)))
        .returning({ id: webhookDeliveries.id });
      const attempts = await db
        .delete(webhookAttempts)
        .where(lt(webhookAttempts.sentAt, attemptsBefore))
        .returning({ id: webhookAttempts.id });
      return deliveries.length + attempts.length;
    },
    /** Disables an enabled webhook; false when it was already disabled (or gone), so only one caller acts. */
    async disable(id: string): Promise<WebhookRow | undefined> {
      const [row] = await db
        .update(webhooks)
        .set({ enabled: false, updatedAt: new Date() })
        .where(and(eq(webhooks.id, id), eq(webhooks.enabled, true)))
        .returning();
      return row;
    },
  };
}
export type WebhookRepo = ReturnType<typeof createWebhookRepo>;
