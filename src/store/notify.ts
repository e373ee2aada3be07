import pg from 'pg';
import type { Logger } from '../lib/logger.js';

/**
 * LISTENs on a Postgres channel on a dedicated connection (the pool's come and go with its load; this one hears
 * notifications even while the pool holds none), reconnecting every
 * second until it is back. `onNotify(undefined)` says notifications may have been missed: when the connection is lost
 * and again once it listens anew (the principal cache clears itself, the log hub polls). Returns a function that stops.
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

  const reconnectSoon = () => {
    if (!stopped) retry = setTimeout(() => void connect().catch(reconnectSoon), 1000);
  };

  async function connect(): Promise<void> {
    const c = new pg.Client({ connectionString: url });
    let lost = false;
    c.on('notification', (msg) => onNotify(msg.payload));
    c.on('error', (err) => {
      if (lost) return; // one reconnect per connection, however many errors it reports
      lost = true;
      log.warn({ err, channel }, 'LISTEN connection lost; reconnecting');
      void c.end().catch(() => undefined);
      if (client === c) client = undefined;
      onNotify(undefined);
      reconnectSoon();
    });
    try {
      await c.connect();
      await c.query(`listen ${channel}`);
    } catch (err) {
      lost = true;
      void c.end().catch(() => undefined);
      throw err;
    }
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
