import { Type } from '@sinclair/typebox';
import type { AuditRow } from '../../store/repos/audit.js';
import { Timestamp } from './common.js';

/** Render's `auditLog`; `event` uses Render's names, plus Slipway's own for actions Render lacks. */
export const AuditLogBody = Type.Object(
  {
    id: Type.String(),
    timestamp: Timestamp,
    event: Type.String(),
    status: Type.Union([Type.Literal('success'), Type.Literal('error')]),
    actor: Type.Object({
      type: Type.Union([Type.Literal('user'), Type.Literal('rest_api'), Type.Literal('system')]),
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
