/**
 * The outbox's claim, on the store itself (PGlite, or Postgres with TEST_DATABASE_URL): it takes turns between
 * workspaces, keeps to the per-webhook (one for a failing webhook) and per-workspace limits after the sends under way,
 * and two claims at once never take the same row.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/db.js';
import type { Repos } from '../src/store/repos/index.js';
import type { ClaimQuery } from '../src/store/repos/webhooks.js';
import { openTestStore } from './helpers/store.js';

describe('webhooks: the claim', () => {
  let store: Store;
  let repos: Repos;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ store, repos, remove: cleanup } = await openTestStore('slipway-claim-'));
    for (const ws of ['tea-big', 'tea-small', 'tea-third'])
      await repos.workspaces.insert({ id: ws, name: ws, ownerUserId: 'usr-claim' });
  }, 60_000);
  afterAll(() => cleanup?.());
  beforeEach(() => store.executeSql('delete from webhooks'));

  const hook = (id: string, workspaceId: string, failing = false) =>
    repos.webhooks.insert({
      id,
      workspaceId,
      name: id,
      url: 'https://example.com/hook',
      sealedSecret: 'sealed',
      failingSince: failing ? new Date() : null,
    });
  /** `n` due deliveries of a webhook, each older than the next (and than any queued later). */
  const queue = async (webhookId: string, n: number) => {
    for (let i = 0; i < n; i++)
      await repos.webhooks.enqueueTest({ webhookId, eventId: `evt-${webhookId}-${i}`, payload: '{}' }, 1000);
  };
  const claim = (q: Partial<ClaimQuery>) =>
    repos.webhooks.claim({
      limit: 32,
      leaseMs: 60_000,
      perWebhook: 100,
      perFailingWebhook: 1,
      perWorkspace: 100,
      busyWebhooks: new Map(),
      busyWorkspaces: new Map(),
      ...q,
    });
  const byWorkspace = (rows: { workspaceId: string }[]) =>
    rows.reduce<Record<string, number>>((n, r) => ({ ...n, [r.workspaceId]: (n[r.workspaceId] ?? 0) + 1 }), {});

  it("takes every workspace's oldest row before anyone's second, however old the other backlog is", async () => {
    await hook('whk-big', 'tea-big');
    await hook('whk-small', 'tea-small');
    await hook('whk-third', 'tea-third');
    await queue('whk-big', 40); // the oldest 40
    await queue('whk-small', 2);
    await queue('whk-third', 1);
    const first = await claim({ limit: 3 });
    expect(byWorkspace(first)).toEqual({ 'tea-big': 1, 'tea-small': 1, 'tea-third': 1 });
    expect(first.find((d) => d.workspaceId === 'tea-big')!.eventId).toBe('evt-whk-big-0');
    // Leased rows are not claimed again; the next turns follow.
    const second = await claim({ limit: 3 });
    expect(byWorkspace(second)).toEqual({ 'tea-big': 2, 'tea-small': 1 });
    expect(second.map((d) => d.eventId)).not.toContain('evt-whk-big-0');
  });

  it("counts a workspace's sends under way: one at its limit gets nothing more, the others their turn", async () => {
    await hook('whk-big', 'tea-big');
    await hook('whk-small', 'tea-small');
    await queue('whk-big', 20);
    await queue('whk-small', 3);
    const rows = await claim({ perWorkspace: 8, busyWorkspaces: new Map([['tea-big', 8]]) });
    expect(byWorkspace(rows)).toEqual({ 'tea-small': 3 });
    const more = await claim({ perWorkspace: 8, busyWorkspaces: new Map([['tea-big', 5]]) });
    expect(byWorkspace(more)).toEqual({ 'tea-big': 3 });
  });

  it('keeps to the per-webhook limit after its sends under way, and one at a time for a failing webhook', async () => {
    await hook('whk-a', 'tea-big');
    await hook('whk-b', 'tea-big');
    await hook('whk-dead', 'tea-big', true);
    await queue('whk-a', 10);
    await queue('whk-b', 10);
    await queue('whk-dead', 10);
    const rows = await claim({ perWebhook: 4, busyWebhooks: new Map([['whk-b', 3]]) });
    const per = rows.reduce<Record<string, number>>((n, r) => ({ ...n, [r.webhookId]: (n[r.webhookId] ?? 0) + 1 }), {});
    expect(per).toEqual({ 'whk-a': 4, 'whk-b': 1, 'whk-dead': 1 });
    expect(rows.find((d) => d.webhookId === 'whk-dead')).toMatchObject({ failing: true, eventId: 'evt-whk-dead-0' });
  });

  it('skips disabled webhooks and rows not yet due', async () => {
    await hook('whk-off', 'tea-big');
    await hook('whk-later', 'tea-small');
    await repos.webhooks.update('whk-off', { enabled: false });
    await queue('whk-off', 2);
    await queue('whk-later', 2);
    await store.executeSql(
      `update webhook_deliveries set next_attempt_at = now() + interval '1 hour' where webhook_id = 'whk-later'`,
    );
    expect(await claim({})).toEqual([]);
  });

  it('never gives one row to two claims at once', async () => {
    for (const ws of ['tea-big', 'tea-small', 'tea-third']) {
      await hook(`whk-${ws}`, ws);
      await queue(`whk-${ws}`, 30);
    }
    const claims = await Promise.all(Array.from({ length: 6 }, () => claim({ limit: 10 })));
    const ids = claims.flat().map((d) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThan(10);
  });
});
