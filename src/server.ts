import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { createAccess } from './core/access.js';
import { createApiKeys } from './core/api-keys.js';
import { createAuditLog } from './core/audit.js';
import { createAuth } from './core/auth.js';
import { createTeam } from './core/team.js';
import { buildApp, type LogOptions } from './http/app.js';
import { createGuard } from './http/guard.js';
import { scheduleMaintenance } from './jobs/maintenance.js';
import { startQueue, type Queue } from './jobs/queue.js';
import { lockDataDir } from './lib/data-dir-lock.js';
import { createSecretBox, loadSecretKey } from './lib/secret-box.js';
import { openStore, type Store } from './store/db.js';
import { createRepos, inTransaction } from './store/repos/index.js';

export interface Slipway {
  app: FastifyInstance;
  url: string;
  store: Store;
  queue: Queue;
  /** Stops taking requests, lets in-flight ones finish, then closes the queue and the store. */
  close(): Promise<void>;
}

/** The composition root: config -> store -> queue -> core -> http (DESIGN.md §3). */
export async function startSlipway(config: Config, options: LogOptions = {}): Promise<Slipway> {
  const unlock = lockDataDir(config.dataDir);
  const cleanup: Array<() => Promise<void> | void> = [unlock];
  const closeAll = async () => {
    for (const step of cleanup.reverse()) await step();
  };
  try {
    const secretBox = createSecretBox(loadSecretKey(config.secretKey, config.dataDir));
    const store = await openStore(config);
    cleanup.push(() => store.close());
    const repos = createRepos(store.db);
    const transact = <T>(work: Parameters<typeof inTransaction<T>>[1]) => inTransaction(store.db, work);

    let app: FastifyInstance | undefined;
    const queue = await startQueue(store.executeSql, (err) => app?.log.error({ err }, 'job queue error'));
    cleanup.push(() => queue.stop());

    const access = createAccess(repos.workspaces);
    app = await buildApp(
      {
        config,
        access,
        guard: createGuard(access),
        auth: createAuth({ ...repos, transact, sessionTtlDays: config.sessionTtlDays, operatorToken: config.operatorToken }),
        apiKeys: createApiKeys(repos.apiKeys),
        team: createTeam({ ...repos, transact, inviteTtlDays: config.inviteTtlDays }),
        audit: createAuditLog(repos.audit),
        repos,
        secretBox,
        health: { store: () => store.ping(), queue: () => queue.ping(), storeKind: store.kind },
      },
      options,
    );
    const server = app;
    cleanup.push(async () => {
      // close() waits for in-flight requests but leaves keep-alive sockets open until they
      // idle out; closing each as soon as it is idle lets shutdown finish promptly.
      const sweep = setInterval(() => server.server.closeIdleConnections(), 50);
      try {
        await server.close();
      } finally {
        clearInterval(sweep);
      }
    });
    await scheduleMaintenance(queue.boss, repos);
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    return { app, url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`, store, queue, close: closeAll };
  } catch (err) {
    await closeAll().catch(() => undefined);
    throw err;
  }
}
