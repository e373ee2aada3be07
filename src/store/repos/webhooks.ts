import { and, desc, eq, inArray, lt, ne, sql } from 'drizzle-orm';
import type { Db } from '../db.js';
import { rowsOf } from '../db.js';
import { webhookAttempts, webhookDeliveries, webhooks } from '../schema.js';
import { within, type ListWindow } from './filters.js';

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
  eventId: string;
  eventType: string;
  payload: string;
  attempts: number;
  createdAt: Date;
  webhook: Pick<WebhookRow, 'url' | 'sealedSecret' | 'sealedPreviousSecret' | 'previousSecretExpiresAt'>;
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
    /** A delivery outside the event feed (the test ping). */
    async enqueue(row: { webhookId: string; eventId: string; eventType: string; payload: string }): Promise<void> {
      await db.insert(webhookDeliveries).values(row);
    },
    /**
     * Leases up to `limit` due deliveries of enabled webhooks until `leaseMs` from now. `skip locked`: two processes on
     * one Postgres never claim the same row; a process killed mid-send leaves a lease that expires, and the row is
     * claimed again (at least once).
     */
    async claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
      const result = await db.execute(sql`
        update webhook_deliveries d set claimed_until = now() + ${`${leaseMs} milliseconds`}::interval
        from webhooks w
        where w.id = d.webhook_id and d.id in (
          select d2.id from webhook_deliveries d2 join webhooks w on w.id = d2.webhook_id
          where d2.status = 'pending' and w.enabled and d2.next_attempt_at <= now()
            and (d2.claimed_until is null or d2.claimed_until < now())
          order by d2.next_attempt_at limit ${limit}
          for update of d2 skip locked
        )
        returning d.id, d.webhook_id, d.event_id, d.event_type, d.payload, d.attempts, d.created_at,
          w.url, w.sealed_secret, w.sealed_previous_secret, w.previous_secret_expires_at`);
      return rowsOf(result).map((r) => ({
        id: Number(r.id),
        webhookId: r.webhook_id as string,
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
    /** Hands a claimed delivery back untried (over a concurrency limit). */
    async release(id: number): Promise<void> {
      await db.update(webhookDeliveries).set({ claimedUntil: null }).where(eq(webhookDeliveries.id, id));
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
