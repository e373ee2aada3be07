import { newId } from '../lib/ids.js';
import { cacheKey, type ReadCache } from './read-cache.js';
import type { AuditQuery, AuditRepo, AuditRow } from '../store/repos/audit.js';

export interface AuditEntry {
  workspaceId: string | null;
  event: string;
  status: AuditRow['status'];
  actor: { type: AuditRow['actorType']; id?: string; email?: string };
  /** Flat strings only (Render's shape). Never a password, token or secret value. */
  metadata: Record<string, string>;
}

export function createAuditLog(repo: Pick<AuditRepo, 'insert' | 'list'>, cache: ReadCache) {
  return {
    record: (entry: AuditEntry) =>
      repo.insert({
        id: newId('audit'),
        workspaceId: entry.workspaceId,
        event: entry.event,
        status: entry.status,
        actorType: entry.actor.type,
        actorId: entry.actor.id ?? null,
        actorEmail: entry.actor.email ?? null,
        metadata: JSON.stringify(entry.metadata),
      }),
    list: (q: AuditQuery) => cache.get(cacheKey('audit', q), ['audit_logs'], () => repo.list(q)),
  };
}
export type AuditLog = ReturnType<typeof createAuditLog>;
