import { eq, inArray, sql } from 'drizzle-orm';
import type PgBoss from 'pg-boss';
import { describe, expect, it } from 'vitest';
import { sessions } from '../src/store/schema/index.js';
import { client, signUp } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { bootServer, TEST_DATABASE_URL, useServer, type TestServer } from './helpers/server.js';

const storeKind = TEST_DATABASE_URL ? 'postgres' : 'pglite';

const sessionIdsOf = async (server: TestServer, userId: string) =>
  (await server.slipway.store.db.select({ id: sessions.id }).from(sessions).where(eq(sessions.userId, userId))).map(
    (r) => r.id,
  );

/** Waits until pg-boss reports the job `completed` (failing fast if it failed) and returns it. */
async function completedJob(boss: PgBoss, id: string, timeoutMs = 15_000) {
  return waitFor(
    `job ${id} to complete`,
    async () => {
      const job = await boss.getJobById<object>('maintenance', id);
      if (job && job.state !== 'created' && job.state !== 'active' && job.state !== 'completed') {
        throw new Error(`job ${id} ended ${job.state}: ${JSON.stringify(job.output)}`);
      }
      return job?.state === 'completed' ? job : undefined;
    },
    timeoutMs,
    200,
  );
}

describe(`the job queue on the store (${storeKind})`, () => {
  const ctx = useServer();

  it('keeps its tables in the store and schedules maintenance every 15 minutes', async () => {
    expect(ctx.server.slipway.store.kind).toBe(storeKind);
    const { rows } = await ctx.server.slipway.store.executeSql(
      `select name from pgboss.queue where name = 'maintenance'`,
    );
    expect(rows).toEqual([{ name: 'maintenance' }]);
    const schedules = await ctx.server.slipway.queue.boss.getSchedules();
    expect(schedules).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'maintenance', cron: '*/15 * * * *' })]),
    );
  });

  it('a maintenance job deletes expired sessions and keeps live ones', async () => {
    const expired = await signUp(ctx.api);
    const live = await signUp(ctx.api);
    const [expiredSession] = await sessionIdsOf(ctx.server, expired.id);
    expect(expiredSession).toBeTruthy();
    await ctx.server.slipway.store.db
      .update(sessions)
      .set({ expiresAt: sql`now() - interval '1 minute'` })
      .where(eq(sessions.id, expiredSession!));
    // An expired session is already refused; the job is what removes its row.
    expect((await ctx.api.get('/v1/users', { cookie: expired.cookie })).status).toBe(401);
    expect(await sessionIdsOf(ctx.server, expired.id)).toEqual([expiredSession]);

    const boss = ctx.server.slipway.queue.boss;
    const id = await boss.send('maintenance', {});
    expect(id).toBeTruthy();
    const job = await completedJob(boss, id!);
    expect(job.output).toMatchObject({
      sessions: expect.any(Number),
      invites: expect.any(Number),
      idempotencyKeys: expect.any(Number),
    });
    expect((job.output as { sessions: number }).sessions).toBeGreaterThanOrEqual(1);

    expect(await sessionIdsOf(ctx.server, expired.id)).toEqual([]);
    expect(await sessionIdsOf(ctx.server, live.id)).toHaveLength(1);
    expect((await ctx.api.get('/v1/users', { cookie: live.cookie })).status).toBe(200);
  });

  it('a job left in the queue at shutdown runs after a restart', async () => {
    // Sessions that expire as soon as they are made.
    const first = await bootServer({ SLIPWAY_SESSION_TTL_DAYS: '0' });
    let second: TestServer | undefined;
    try {
      const users = [await signUp(client(first.url)), await signUp(client(first.url))];
      const ids = users.map((u) => u.id);
      const rowsOf = async (server: TestServer) =>
        server.slipway.store.db.select({ id: sessions.id }).from(sessions).where(inArray(sessions.userId, ids));
      expect(await rowsOf(first)).toHaveLength(2);

      // Due in a few seconds: still waiting when this server stops.
      const id = (await first.slipway.queue.boss.send('maintenance', {}, { startAfter: 3 }))!;
      expect(id).toBeTruthy();
      expect((await first.slipway.queue.boss.getJobById('maintenance', id))?.state).toBe('created');
      await first.stop();
      const stoppedAt = Date.now();

      second = await bootServer({}, { dataDir: first.dataDir, databaseUrl: first.databaseUrl });
      const job = await completedJob(second.slipway.queue.boss, id, 20_000);
      expect(new Date(job.startedOn).getTime()).toBeGreaterThanOrEqual(stoppedAt); // run by the new server
      expect((job.output as { sessions: number }).sessions).toBeGreaterThanOrEqual(2);
      expect(await rowsOf(second)).toEqual([]);
    } finally {
      await second?.stop();
      await first.close();
    }
  });
});
