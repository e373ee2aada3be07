import pg from 'pg';
import type { Logger } from '../lib/logger.js';

/**
 * LISTENs on a Postgres channel on a dedicated connection (pooled connections cannot hold a
 * LISTEN), reconnecting after errors. Notifications missed while reconnecting are covered by
 * the listener's own periodic check. Returns a function that stops listening.
 */
export async function listenChannel(
  url: string,
  channel: string,
  onNotify: (payload: string | undefined) => void,
  log: Logger,
): Promise<() => Promise<void>> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    const c = new pg.Client({ connectionString: url });
    c.on('notification', (msg) => onNotify(msg.payload));
    c.on('error', (err) => {
      log.warn({ err, channel }, 'LISTEN connection lost; reconnecting');
      void c.end().catch(() => undefined);
      if (!stopped) retry = setTimeout(() => void connect().catch(() => undefined), 1000);
    });
    await c.connect();
    await c.query(`listen ${channel}`);
    client = c;
    onNotify(undefined); // whatever happened while not listening
  }

  await connect();
  return async () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    await client?.end().catch(() => undefined);
  };
}
