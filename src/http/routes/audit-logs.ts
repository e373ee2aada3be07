import { Type } from '@sinclair/typebox';
import { decodeCursor, envelopeOf } from '../../lib/cursor.js';
import { badRequest, notFound } from '../../lib/errors.js';
import type { HttpDeps } from '../deps.js';
import { principalOf } from '../guard.js';
import { defineRoute } from '../route.js';
import { AuditLogBody, auditLogBody } from '../schemas/audit.js';
import { DEFAULT_LIMIT, Envelope, IdParam, ListQuery, OwnerIdQuery, Timestamp } from '../schemas/common.js';

const TimeRange = { startTime: Type.Optional(Timestamp), endTime: Type.Optional(Timestamp), ...ListQuery };

export function auditLogRoutes({ audit, guard, config }: HttpDeps) {
  async function list(
    req: Parameters<typeof guard.context>[0],
    ownerId: string | undefined,
    q: { startTime?: string; endTime?: string; cursor?: string; limit?: number },
  ) {
    // The operator may read every workspace's log at once (and entries with no workspace).
    const workspaceId =
      principalOf(req).kind === 'operator' && !ownerId ? undefined : (await guard.context(req, ownerId)).workspaceId;
    const startTime = q.startTime ? new Date(q.startTime) : undefined;
    const endTime = q.endTime ? new Date(q.endTime) : undefined;
    if (startTime && endTime && startTime > endTime) throw badRequest('startTime must not be after endTime');
    const rows = await audit.list({
      workspaceId,
      startTime,
      endTime,
      beforeId: decodeCursor(q.cursor),
      limit: q.limit ?? DEFAULT_LIMIT,
    });
    return envelopeOf('auditLog', rows, auditLogBody);
  }
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/audit-logs',
      summary: 'List audit log entries, newest first',
      tags: ['Audit logs'],
      access: 'admin',
      schema: {
        querystring: Type.Object({ ownerId: OwnerIdQuery, ...TimeRange }),
        response: { 200: Envelope('auditLog', AuditLogBody) },
      },
      handler: async (req) => list(req, req.query.ownerId, req.query),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/owners/:ownerId/audit-logs',
      summary: "List a workspace's audit logs (Render: list-owner-audit-logs)",
      tags: ['Audit logs'],
      access: 'admin',
      schema: {
        params: Type.Object({ ownerId: IdParam }),
        querystring: Type.Object(TimeRange),
        response: { 200: Envelope('auditLog', AuditLogBody) },
      },
      handler: async (req) => list(req, req.params.ownerId, req.query),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/organizations/:orgId/audit-logs',
      summary:
        "List every workspace's audit logs (Render: list-organization-audit-logs): the organization is this installation (SLIPWAY_ORGANIZATION_ID), read with the operator token",
      tags: ['Audit logs'],
      access: 'operator',
      schema: {
        params: Type.Object({ orgId: IdParam }),
        querystring: Type.Object(TimeRange),
        response: { 200: Envelope('auditLog', AuditLogBody) },
      },
      handler: async (req) => {
        if (req.params.orgId !== config.organizationId) throw notFound('organization');
        return list(req, undefined, req.query);
      },
    }),
  ];
}
