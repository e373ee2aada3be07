import { createAccess } from '../../core/access.js';
import { createAuditLog } from '../../core/audit.js';
import { createPrincipalCache, PRINCIPAL_CHANNEL } from '../../core/principal-cache.js';
import { createReadCache } from '../../core/read-cache.js';
import { TABLES_CHANNEL } from '../../store/db.js';
import { listenChannel } from '../../store/notify.js';
import type { Cleanup } from '../cleanup.js';
import type { Foundation } from './foundation.js';

/**
 * Who may do what, and the caches in front of it (docs/architecture.md, "Who is calling: the principal cache" and
 * "Pages read again: the read cache"), and the audit log.
 */
export async function wireAccess({ config, store, transact, repos, log }: Foundation, cleanup: Cleanup) {
  const principals = createPrincipalCache({ ttlMs: config.principalCacheMs, transact });
  // Several processes on one Postgres: a sign-out, revocation or membership change made by another
  // process drops this one's cached entry too. (One process drops it directly.)
  if (config.databaseUrl && config.principalCacheMs > 0)
    cleanup.push(await listenChannel(config.databaseUrl, PRINCIPAL_CHANNEL, principals.onNotify, log));
  const access = createAccess(repos.workspaces, principals);
  const readCache = createReadCache({ ttlMs: config.readCacheMs });
  store.onTableChange(readCache.onNotify);
  // Writes by other processes, heard even while this one's pool holds no connection (src/store/db.ts).
  if (config.databaseUrl && config.readCacheMs > 0)
    cleanup.push(await listenChannel(config.databaseUrl, TABLES_CHANNEL, readCache.onNotify, log));
  const audit = createAuditLog(repos.audit, readCache);
  return { principals, access, readCache, audit };
}
export type Access = Awaited<ReturnType<typeof wireAccess>>;
