import pg from 'pg';
import type { Logger } from '../lib/logger.js';

/**
 * Makes one process of several on one Postgres the one that runs some work (log streams' forwarding): it holds a
 * session advisory lock named `name` on a dedicated connection, tried every `retryMs` until it is free. While it holds
 * it, `onLead` has run; when the connection (and the lock with it) is lost, `onLose` runs and it tries again. Returns
 * a function that stops (and lets go of the lock).
 */
export async function holdLock(
  url: string,
  name: string,
  hooks: { onLead(): Promise<void>; onLose(): Promise<void> },
  log: Logger,
  retryMs = 5000,
): Promise<() => Promise<void>> {
  let client: pg.Client | undefined;
  let leading = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const schedule = () => {
    if (!stopped) timer = setTimeout(() => void attempt(), retryMs);
  };
  async function lose() {
    if (!leading) return;
    leading = false;
    await hooks.onLose().catch((err) => log.warn({ err, lock: name }, 'stopping the work of a lost lock failed'));
  }
  async function attempt() {
    if (stopped) return;
    const c = new pg.Client({ connectionString: url });
    let lost = false;
    c.on('error', (err) => {
      if (lost) return;
      lost = true;
      log.warn({ err, lock: name }, 'lock connection lost; trying again');
      void c.end().catch(() => undefined);
      if (client === c) client = undefined;
      void lose().then(schedule);
    });
    try {
      await c.connect();
      const { rows } = await c.query<{ held: boolean }>('select pg_try_advisory_lock(hashtext($1)) as held', [name]);
      if (!rows[0]?.held) {
        lost = true;
        await c.end();
        return schedule();
      }
      client = c;
      leading = true;
      await hooks.onLead();
    } catch (err) {
      if (!lost) {
        lost = true;
        void c.end().catch(() => undefined);
        log.warn({ err, lock: name }, 'taking the lock failed; trying again');
        schedule();
      }
    }
  }

  await attempt();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await lose();
    await client?.end().catch(() => undefined);
  };
}
