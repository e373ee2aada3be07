import { Type } from '@sinclair/typebox';
import type { AuditRow } from '../../store/repos/audit.js';
import { AUDIT_ACTOR_TYPES, AUDIT_STATUSES } from '../../model/enums.js';
import { literalUnion, Timestamp } from './common.js';

/** Render's `auditLog`; `event` uses Render's names, plus Slipway's own for actions Render lacks. */
export const AuditLogBody = Type.Object(
  {
    id: Type.String(),
    timestamp: Timestamp,
    event: Type.String(),
    status: literalUnion(AUDIT_STATUSES),
    actor: Type.Object({
      type: literalUnion(AUDIT_ACTOR_TYPES),
      id: Type.Optional(Type.String()),
      email: Type.Optional(Type.String()),
    }),
    metadata: Type.Record(Type.String(), Type.String()),
  },
  { title: 'auditLog' },
);
export const auditLogBody = (row: AuditRow) => ({
  id: row.id,
  timestamp: row.createdAt.toISOString(),
  event: row.event,
  status: row.status,
  actor: {
    type: row.actorType,
    ...(row.actorId ? { id: row.actorId } : {}),
    ...(row.actorEmail ? { email: row.actorEmail } : {}),
  },
  metadata: JSON.parse(row.metadata) as Record<string, string>,
});
