import { createWriteStream, type WriteStream } from 'node:fs';
import { accessLineOf } from '../access-log.js';
import { createRouteTable } from '../route-table.js';
import { startRouter } from '../router.js';
import { createCertificateStore } from '../tls.js';
import { overSocket, type DaemonFiles, type DaemonSettings, type DaemonUpdate } from './files.js';
import type { DaemonLog } from './output.js';

/** What serves the apps in the router process: one router (serve.ts), or several worker processes (workers.ts). */
export interface Serving {
  ports: { http: number; https?: number };
  /** Serves the update (DaemonUpdate as JSON) from now on; rejects when it does not load. */
  load(text: string): Promise<void>;
  /** Opens access.log again (the API renamed it). */
  reopenLog(): void;
  /** Stops accepting, ends the open connections and writes the last access log lines. */
  close(): Promise<void>;
}

/**
 * One Node router serving `settings`, from `initial` (the last update) until told otherwise, writing one access log
 * line per request.
 */
export async function startServing(
  settings: DaemonSettings,
  files: DaemonFiles,
  log: DaemonLog,
  initial: string | undefined,
): Promise<Serving> {
  const table = createRouteTable(settings.appsDomain);
  const certificates = settings.https ? createCertificateStore(settings.https.fallback) : undefined;
  const load = (text: string) => {
    const update = JSON.parse(text) as DaemonUpdate;
    table.importState(update.routes);
    const broken = certificates?.set(update.certificates) ?? [];
    if (broken.length) log.warn({ broken }, 'router: certificates that do not load are not served');
  };
  if (initial !== undefined) {
    try {
      load(initial);
    } catch (err) {
      log.error({ err }, 'router: the kept route table did not load; waiting for the API to send one');
    }
  }

  let accessLog: WriteStream = createWriteStream(files.accessLog, { flags: 'a', mode: 0o600 });
  // Lines are written in batches (every 50 ms at most): one write per request would cost a syscall each. Each write
  // appends whole lines (O_APPEND), so several worker processes share the file without cutting each other's lines.
  let pending: string[] = [];
  const flushAccessLog = () => {
    if (pending.length === 0) return;
    accessLog.write(pending.join(''));
    pending = [];
  };
  const flusher = setInterval(flushAccessLog, 50);
  flusher.unref();

  /** The API holds the ACME orders; while it is down a challenge is simply not answered (the order is retried). */
  const acmeAnswer = async (token: string): Promise<string | undefined> => {
    const reply = await overSocket(files.acme, 'GET', `/${token}`, undefined, 5000).catch(() => undefined);
    return reply?.status === 200 ? reply.text : undefined;
  };

  const router = await startRouter({
    host: settings.host,
    port: settings.port,
    resolve: table.resolve,
    timeouts: settings.timeouts,
    behindProxy: settings.behindProxy,
    onRequest: (record) => {
      pending.push(accessLineOf(record));
      if (pending.length >= 256) flushAccessLog();
    },
    log,
    ...(settings.https && certificates
      ? {
          https: {
            port: settings.https.port,
            certificates,
            ...(settings.https.redirectPort ? { redirectPort: settings.https.redirectPort } : {}),
          },
        }
      : {}),
    ...(settings.acme ? { acmeAnswer } : {}),
  });

  return {
    ports: { http: router.port, ...(router.httpsPort !== undefined ? { https: router.httpsPort } : {}) },
    load: async (text) => load(text),
    reopenLog() {
      flushAccessLog();
      const old = accessLog;
      accessLog = createWriteStream(files.accessLog, { flags: 'a', mode: 0o600 });
      old.end();
    },
    async close() {
      await router.close();
      clearInterval(flusher);
      flushAccessLog();
      await new Promise<void>((resolve) => accessLog.end(() => resolve()));
    },
  };
}
