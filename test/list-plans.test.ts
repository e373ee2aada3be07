/**
 * List routes stay fast as tables grow: every list query the API runs is a walk down an index
 * in cursor order, never a scan or a sort of the whole table. Each repository call's SQL is
 * captured as it runs and explained with sequential scans and sorts priced out of reach: a plan
 * that still holds a Seq Scan or a Sort has no index to serve it. Runs on PGlite, and on
 * Postgres with TEST_DATABASE_URL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/app/config.js';
import { openStore, type Db } from '../src/store/db.js';
import { createRepos, type Repos } from '../src/store/repos/index.js';
import * as schema from '../src/store/schema/index.js';
import { signUp } from './helpers/client.js';
import { createTestDatabase, TEST_DATABASE_URL, useServer } from './helpers/server.js';
import { newId } from '../src/lib/ids.js';

interface Captured {
  sql: string;
  params: unknown[];
}

let captured: Captured | undefined;
let explain: (q: Captured) => Promise<unknown>;
let repos: Repos;
let cleanup: () => Promise<void>;
const logger = { logQuery: (sql: string, params: unknown[]) => void (captured = { sql, params }) };

beforeAll(async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-plans-'));
  const database = TEST_DATABASE_URL ? await createTestDatabase(TEST_DATABASE_URL) : undefined;
  // The real store migrates the schema; then a client of our own runs the repositories with a query logger.
  const store = await openStore(
    loadConfig({ SLIPWAY_DATA_DIR: dataDir, DATABASE_URL: database?.url ?? '', SLIPWAY_SECRET_KEY: '' }),
  );
  await store.close();
  const settings = 'set enable_seqscan = off; set enable_sort = off; set enable_bitmapscan = off';
  if (database) {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(settings);
    repos = createRepos(drizzlePg(client, { schema, logger }) as unknown as Db);
    explain = async (q) => (await client.query(`explain (format json) ${q.sql}`, q.params)).rows[0]['QUERY PLAN'];
    cleanup = async () => {
      await client.end();
      await database.drop();
    };
  } else {
    const client = new PGlite(path.join(dataDir, 'pglite'));
    await client.exec(settings);
    repos = createRepos(drizzlePglite({ client, schema, logger }) as unknown as Db);
    explain = async (q) => {
      const { rows } = await client.query<Record<string, unknown>>(`explain (format json) ${q.sql}`, q.params);
      const plan = rows[0]!['QUERY PLAN'];
      return typeof plan === 'string' ? JSON.parse(plan) : plan;
    };
    cleanup = () => client.close();
  }
  cleanup = ((inner) => async () => {
    await inner();
    rmSync(dataDir, { recursive: true, force: true });
  })(cleanup);
});
afterAll(() => cleanup?.());

/** Every node of a plan, depth first. */
function nodesOf(plan: any): Array<Record<string, unknown>> {
  const node = plan.Plan ?? plan;
  return [node, ...((node.Plans as unknown[]) ?? []).flatMap(nodesOf)];
}

async function planOf(run: () => Promise<unknown>) {
  captured = undefined;
  await run();
  if (!captured) throw new Error('the repository ran no query');
  const [plan] = (await explain(captured)) as unknown[];
  return nodesOf(plan);
}

const W = 'tea-00000000000000000000';
const S = 'srv-00000000000000000000';
const CURSOR = 'zzz-zzzzzzzzzzzzzzzzzzzz';

// Each route's first page and a later page (the keyset cursor), as the handlers call them.
const LISTS: Array<[string, (r: Repos, beforeId?: string) => Promise<unknown>]> = [
  ['audit logs', (r, beforeId) => r.audit.list({ workspaceId: W, beforeId, limit: 20 })],
  ['services', (r, beforeId) => r.services.list({ workspaceIds: [W], beforeId, limit: 20 })],
  ['deploys', (r, beforeId) => r.deploys.list({ serviceId: S, beforeId, limit: 20 })],
  ['one-off jobs', (r, beforeId) => r.jobs.list({ serviceId: S, beforeId, limit: 20 })],
  ['events of a service', (r, beforeId) => r.events.list({ serviceId: S }, { beforeId, limit: 20 })],
  ['api keys', (r, beforeId) => r.apiKeys.list(W, { beforeId, limit: 20 })],
  ['invites', (r, beforeId) => r.invites.listPending(W, new Date(), { beforeId, limit: 20 })],
  ['env groups', (r, beforeId) => r.envGroups.list({ workspaceIds: [W], beforeId, limit: 20 })],
  ['projects', (r, beforeId) => r.projects.listProjects({ workspaceIds: [W], beforeId, limit: 20 })],
  ['postgres', (r, beforeId) => r.datastores.list({ kind: 'postgres', workspaceIds: [W], beforeId, limit: 20 })],
  ['members', (r, after) => r.workspaces.listMembers(W, { afterUserId: after, limit: 20 })],
];

describe('list queries', () => {
  it.each(LISTS)('%s: an index walk in cursor order, no scan or sort of the table', async (_name, list) => {
    for (const cursor of [undefined, CURSOR]) {
      const nodes = await planOf(() => list(repos, cursor));
      const types = nodes.map((n) => `${n['Node Type']}${n['Relation Name'] ? ` on ${n['Relation Name']}` : ''}`);
      expect(types.filter((t) => t.startsWith('Seq Scan') || t === 'Sort' || t.startsWith('Bitmap'))).toEqual([]);
      expect(types[0]).toBe('Limit');
    }
  });
});

// Lists of tables that grow without end, with a time window: the window bounds the index walk itself (ids sort by
// creation time), so neither the rows newer than it nor those older are read on the way.
const DAY = 86_400_000;
const [from, to] = [new Date(Date.now() - 30 * DAY), new Date(Date.now() - 29 * DAY)];
const WINDOWED: Array<[string, (r: Repos) => Promise<unknown>]> = [
  ['events of a service', (r) => r.events.list({ serviceId: S }, { startTime: from, endTime: to, limit: 20 })],
  ['audit logs', (r) => r.audit.list({ workspaceId: W, startTime: from, endTime: to, limit: 20 })],
  ['webhook attempts', (r) => r.webhooks.listAttempts('whk-0', { sentAfter: from, sentBefore: to, limit: 20 })],
];

describe('lists with a time window', () => {
  it.each(WINDOWED)('%s: the window is a range of the index walk', async (_name, list) => {
    const nodes = await planOf(() => list(repos));
    const scans = nodes.filter((n) => n['Index Name']);
    expect(scans).toHaveLength(1);
    expect(String(scans[0]!['Index Cond'])).toMatch(/\(id >= .*\(id < /);
  });
});

// Log pages are keyset pages on time: a workspace's, one service's, or several services' (one walk each, merged).
const window = (backward: boolean) => ({ startUs: 0, endUs: Date.now() * 1000, backward, limit: 200 });
const LOG_PAGES: Array<[string, string, (r: Repos) => Promise<unknown>]> = [
  ['a workspace', 'logs_workspace_time_idx', (r) => r.logs.page({ workspaceId: W }, window(true))],
  ['one service', 'logs_resource_time_idx', (r) => r.logs.page({ workspaceId: W, resourceIds: [S] }, window(true))],
  [
    'three services',
    'logs_resource_time_idx',
    (r) => r.logs.page({ workspaceId: W, resourceIds: [S, `${S}1`, `${S}2`] }, window(true)),
  ],
  [
    'three services, forward',
    'logs_resource_time_idx',
    (r) => r.logs.page({ workspaceId: W, resourceIds: [S, `${S}1`, `${S}2`] }, window(false)),
  ],
];

describe('log pages', () => {
  // Walking the time index instead (and filtering by service) would read every other service's rows on the way.
  it.each(LOG_PAGES)('logs of %s: walks %s in time order, no scan or sort', async (_name, index, read) => {
    const nodes = await planOf(() => read(repos));
    const types = nodes.map((n) => `${n['Node Type']}${n['Relation Name'] ? ` on ${n['Relation Name']}` : ''}`);
    expect(types.filter((t) => t.startsWith('Seq Scan') || t === 'Sort' || t.startsWith('Bitmap'))).toEqual([]);
    expect(types[0]).toBe('Limit');
    const indexes = nodes.filter((n) => n['Index Name']).map((n) => n['Index Name']);
    expect(indexes.length).toBeGreaterThan(0);
    expect(new Set(indexes)).toEqual(new Set([index]));
  });
});

describe('list pages as tables grow, planned with real statistics', () => {
  const ctx = useServer();

  it("a service's deploys page walks its index after the store's maintenance, with 5,000 deploys", async () => {
    const owner = await signUp(ctx.api);
    const created = await ctx.api.post(
      '/v1/services',
      { type: 'web_service', name: 'many-deploys', serviceDetails: { runtime: 'node' } },
      owner,
    );
    expect(created.status).toBe(201);
    const serviceId: string = created.body.service.id;
    const { store } = ctx.server.slipway;
    const rows = Array.from({ length: 5000 }, (_, i) => ({
      id: newId('deploy', Date.now() - 86_400_000 + i),
      serviceId,
      status: 'deactivated' as const,
      trigger: 'api' as const,
    }));
    for (let i = 0; i < rows.length; i += 1000) await store.db.insert(schema.deploys).values(rows.slice(i, i + 1000));
    // What the maintenance job does every 15 minutes (PGlite has no autovacuum; on Postgres autovacuum would).
    if (store.kind === 'pglite') await store.analyze();
    else await store.executeSql('analyze deploys');
    const { rows: explained } = await store.executeSql(
      'explain (format json) select * from deploys where service_id = $1 order by id desc limit 20',
      [serviceId],
    );
    const raw = explained[0]['QUERY PLAN'];
    const [plan] = typeof raw === 'string' ? JSON.parse(raw) : raw;
    const types = nodesOf(plan).map((n) => n['Node Type']);
    expect(types).not.toContain('Sort');
    const page = await ctx.api.get(`/v1/services/${serviceId}/deploys?limit=20`, owner);
    expect(page.status).toBe(200);
    expect(page.body).toHaveLength(20);
  });
});
