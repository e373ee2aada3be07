import { and, asc, eq, gt, inArray, sql } from 'drizzle-orm';
import type { NotificationChannel } from '../../model/notifications.js';
import { busyJson, fairTurns, leaseFor, lockChosen } from './fair-claim.js';
import { rowsOf, type Db } from '../db.js';
import { memberships, services, users } from '../schema/index.js';
import { notificationDeliveries, notificationOverrides, notificationSettings } from '../schema/notifications.js';

export type NotificationSettingsRow = typeof notificationSettings.$inferSelect;
export type NotificationOverrideRow = typeof notificationOverrides.$inferSelect;
/** A service and its override (none: Render's `default`s). */
export interface ServiceOverride {
  serviceId: string;
  workspaceId: string;
  override: NotificationOverrideRow | null;
}
/** A claimed notification: its channel of its workspace is the target, one send at a time. */
export interface ClaimedNotification {
  id: number;
  workspaceId: string;
  channel: NotificationChannel;
  eventId: string;
  eventType: string;
  payload: string;
  attempts: number;
  createdAt: Date;
}
export interface NotificationClaim {
  limit: number;
  leaseMs: number;
  perWorkspace: number;
  /** Sends under way here, by `<workspace>/<channel>` and by workspace. */
  busyTargets: ReadonlyMap<string, number>;
  busyWorkspaces: ReadonlyMap<string, number>;
}

export const targetOf = (workspaceId: string, channel: string) => `${workspaceId}/${channel}`;

export function createNotificationRepo(db: Db) {
  return {
    async settings(workspaceId: string): Promise<NotificationSettingsRow | undefined> {
      const [row] = await db
        .select()
        .from(notificationSettings)
        .where(eq(notificationSettings.workspaceId, workspaceId));
      return row;
    },
    async putSettings(
      workspaceId: string,
      patch: Partial<Omit<typeof notificationSettings.$inferInsert, 'workspaceId'>>,
    ): Promise<NotificationSettingsRow> {
      const set = { ...patch, updatedAt: new Date() };
      const [row] = await db
        .insert(notificationSettings)
        .values({ workspaceId, ...set })
        .onConflictDoUpdate({ target: notificationSettings.workspaceId, set })
        .returning();
      return row!;
    },
    async putOverride(
      serviceId: string,
      workspaceId: string,
      patch: Partial<Pick<NotificationOverrideRow, 'previewNotificationsEnabled' | 'notificationsToSend'>>,
    ): Promise<NotificationOverrideRow> {
      const set = { ...patch, updatedAt: new Date() };
      const [row] = await db
        .insert(notificationOverrides)
        .values({ serviceId, workspaceId, ...set })
        .onConflictDoUpdate({ target: notificationOverrides.serviceId, set })
        .returning();
      return row!;
    },
    /** The services of the workspaces (each with its override, if any), in service id order after `afterId`. */
    async listOverrides(q: {
      workspaceIds?: string[];
      serviceIds?: string[];
      afterId?: string;
      limit: number;
    }): Promise<ServiceOverride[]> {
      const rows = await db
        .select({ serviceId: services.id, workspaceId: services.workspaceId, override: notificationOverrides })
        .from(services)
        .leftJoin(notificationOverrides, eq(notificationOverrides.serviceId, services.id))
        .where(
          and(
            q.workspaceIds ? inArray(services.workspaceId, q.workspaceIds) : undefined,
            q.serviceIds?.length ? inArray(services.id, q.serviceIds) : undefined,
            q.afterId ? gt(services.id, q.afterId) : undefined,
          ),
        )
        .orderBy(asc(services.id))
        .limit(q.limit);
      return rows;
    },
    /** Who a workspace's emails go to: its members' addresses. */
    async memberEmails(workspaceId: string): Promise<string[]> {
      const rows = await db
        .select({ email: users.email })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(eq(memberships.workspaceId, workspaceId))
        .orderBy(asc(users.email));
      return rows.map((r) => r.email);
    },
    /**
     * Leases due notifications until `leaseMs` from now, up to `limit`, taking turns between workspaces: the (workspace,
     * channel) pairs with pending rows are walked on the pending index, each gives its oldest due row unless it is
     * being sent here already, and every workspace's first turn is taken before anyone's second, up to the
     * per-workspace limit less its sends under way. `skip locked`: two processes never claim the same row.
     */
    async claim(q: NotificationClaim): Promise<ClaimedNotification[]> {
      const result = await db.execute(sql`
        with recursive pending(workspace_id, channel) as (
          (select workspace_id, channel from notification_deliveries where status = 'pending'
            order by workspace_id, channel limit 1)
          union all
          select n.workspace_id, n.channel from pending p cross join lateral (
            select d.workspace_id, d.channel from notification_deliveries d
            where d.status = 'pending' and (d.workspace_id, d.channel) > (p.workspace_id, p.channel)
            order by d.workspace_id, d.channel limit 1
          ) n
        ), busy_target as (
          select key as target, value::int as n from jsonb_each_text(${busyJson(q.busyTargets)}::jsonb)
        ), busy_workspace as (
          select key as workspace_id, value::int as n from jsonb_each_text(${busyJson(q.busyWorkspaces)}::jsonb)
        ), candidates as (
          select c.id, c.next_attempt_at, p.workspace_id
          from pending p
          cross join lateral (
            select d.id, d.next_attempt_at from notification_deliveries d
            where d.workspace_id = p.workspace_id and d.channel = p.channel and d.status = 'pending'
              and d.next_attempt_at <= now() and (d.claimed_until is null or d.claimed_until < now())
            order by d.next_attempt_at, d.id limit 1
          ) c
          where not exists (select 1 from busy_target b where b.target = p.workspace_id || '/' || p.channel)
        ), ${fairTurns(q.perWorkspace, q.limit)}
        update notification_deliveries d set claimed_until = now() + ${leaseFor(q.leaseMs)}
        where d.id in (
          ${lockChosen('notification_deliveries')}
        )
        returning d.id, d.workspace_id, d.channel, d.event_id, d.event_type, d.payload, d.attempts, d.created_at`);
      return rowsOf(result).map((r) => ({
        id: Number(r.id),
        workspaceId: r.workspace_id as string,
        channel: r.channel as NotificationChannel,
        eventId: r.event_id as string,
        eventType: r.event_type as string,
        payload: r.payload as string,
        attempts: Number(r.attempts),
        createdAt: new Date(r.created_at as string),
      }));
    },
    /** Hands back every lease at once: at boot, when no other process can hold one (PGlite's single writer). */
    async releaseAll(): Promise<void> {
      await db
        .update(notificationDeliveries)
        .set({ claimedUntil: null })
        .where(
          and(eq(notificationDeliveries.status, 'pending'), sql`${notificationDeliveries.claimedUntil} is not null`),
        );
    },
    /**
     * After an attempt: pending again at `nextAttemptAt` (with the error, for an operator reading the table), or settled
     * and gone: nothing reads a sent notification back, and a failed one was logged.
     */
    async finish(
      id: number,
      outcome: { status: 'succeeded' | 'failed' } | { status: 'pending'; nextAttemptAt: Date },
      error: string | null,
    ): Promise<void> {
      if (outcome.status !== 'pending') {
        await db.delete(notificationDeliveries).where(eq(notificationDeliveries.id, id));
        return;
      }
      await db
        .update(notificationDeliveries)
        .set({
          attempts: sql`${notificationDeliveries.attempts} + 1`,
          claimedUntil: null,
          lastError: error,
          nextAttemptAt: outcome.nextAttemptAt,
        })
        .where(eq(notificationDeliveries.id, id));
    },
  };
}
export type NotificationRepo = ReturnType<typeof createNotificationRepo>;
