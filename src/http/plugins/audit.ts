import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditEntry, AuditLog } from '../../core/audit.js';
import { redactUrl } from './redact.js';

function actorOf(request: FastifyRequest): AuditEntry['actor'] {
  const p = request.principal;
  // A signed call from a third party (Stripe's webhook): the system acted, on its word.
  if (request.auditInfo.system) return { type: 'system', id: request.auditInfo.system };
  if (!p) return { type: 'user', ...(request.auditInfo.actorEmail ? { email: request.auditInfo.actorEmail } : {}) };
  if (p.kind === 'operator') return { type: 'rest_api', id: 'operator' };
  return { type: p.kind === 'api_key' ? 'rest_api' : 'user', id: p.user.id, email: p.user.email };
}

/**
 * Every mutating request (every route that declares an event) that reached a route is audited before its reply leaves, so a
 * client that reads the audit log next sees it. Bodies are never recorded.
 */
export function registerAudit(app: FastifyInstance, audit: AuditLog) {
  app.addHook('onSend', async (request, reply, payload) => {
    const event = request.routeOptions.config?.audit;
    // A GET that declares an event changes state too (GitHub's setup callback, which GitHub sends as a GET).
    if (!event || reply.getHeader('idempotent-replayed')) return payload;
    const p = request.principal;
    const params = request.params as Record<string, string> | undefined;
    const target = request.auditInfo.target ?? Object.values(params ?? {}).find((v) => /^[a-z]{3}-/.test(v));
    // With no workspace of its own, an action is filed under the actor's workspace.
    const workspaceId =
      request.auditInfo.workspaceId ??
      (p?.kind === 'api_key' ? p.apiKey.workspaceId : p?.kind === 'user' ? p.user.defaultWorkspaceId : null);
    try {
      await audit.record({
        workspaceId,
        event,
        status: reply.statusCode < 400 ? 'success' : 'error',
        actor: actorOf(request),
        metadata: {
          action: `${request.method} ${request.routeOptions.url}`,
          ...(target ? { target } : {}),
          requestId: request.id,
          ip: request.ip,
          method: request.method,
          path: redactUrl(request.url),
          statusCode: String(reply.statusCode),
          ...(p?.kind === 'api_key' ? { apiKeyId: p.apiKey.id } : {}),
          ...(p?.kind === 'operator' ? { operator: 'true' } : {}),
        },
      });
    } catch (err) {
      request.log.error({ err }, 'could not write the audit entry');
    }
    return payload;
  });
}
