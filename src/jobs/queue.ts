import PgBoss from 'pg-boss';
import type { ExecuteSql } from '../store/db.js';

export interface Queue {
  boss: PgBoss;
  /** Resolves when the queue's tables answer. */
  ping(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * pg-boss on the state store itself: on Postgres through its pool, on PGlite through
 * the same single connection (pg-boss's `db.executeSql` option), so jobs live and die
 * with the data they act on.
 */
export async function startQueue(executeSql: ExecuteSql, onError: (err: Error) => void): Promise<Queue> {
  const boss = new PgBoss({ db: { executeSql }, schema: 'pgboss', pollingIntervalSeconds: 1 });
  boss.on('error', onError);
  await boss.start();
  return {
    boss,
    ping: async () => {
      await executeSql('select count(*) from pgboss.version', [] as unknown[]);
    },
    stop: () => boss.stop({ graceful: true, wait: true, timeout: 10_000 }),
  };
}

/** Registers `run` as the handler of `name` and schedules it on `cron` (pg-boss runs each occurrence once across processes). */
export async function schedulePeriodic(boss: PgBoss, name: string, cron: string, run: () => Promise<unknown>) {
  await boss.createQueue(name);
  await boss.work(name, async () => run());
  await boss.schedule(name, cron);
}
