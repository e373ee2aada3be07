import { index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { AUDIT_ACTOR_TYPES, AUDIT_STATUSES } from '../../model/enums.js';
import { createdAt } from './columns.js';

// What the API keeps about requests: the audit log and idempotency keys' first replies.

export const auditLogs = pgTable(
  'audit_logs',
  {
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id'),
    createdAt: createdAt(),
    event: text('event').notNull(),
    status: text('status', { enum: AUDIT_STATUSES }).notNull(),
    actorType: text('actor_type', { enum: AUDIT_ACTOR_TYPES }).notNull(),
    actorId: text('actor_id'),
    actorEmail: text('actor_email'),
    /** Flat string map (Render's `metadata`): action, target, requestId, ip, method, path, statusCode. */
    metadata: text('metadata').notNull(),
  },
  (t) => [index('audit_logs_workspace_idx').on(t.workspaceId, t.id), index('audit_logs_created_idx').on(t.createdAt)],
);

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    statusCode: integer('status_code'),
    /** The first reply, sealed with the secret box: it may hold a secret shown once. */
    sealedReply: text('sealed_reply'),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index('idempotency_created_idx').on(t.createdAt)],
);
