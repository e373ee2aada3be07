/**
 * The ledger's hourly roll-up: a report reads whole hours from it and the rest from raw entries, and must give the same
 * figures as the raw ledger alone, for a period on the hour and one that is not, before and after the roll-up, and with
 * entries that arrived after it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signUp, type Client, type TestUser } from './helpers/client.js';
import { waitFor } from './helpers/process.js';
import { bootServer, type TestServer } from './helpers/server.js';

const HOUR = 3600_000;
let server: TestServer;
let api: Client;
let owner: TestUser;
const sql = (text: string, values: unknown[] = []) => server.slipway.store.executeSql(text, values);

const entry = (resourceId: string, kind: string, plan: string, quantity: number, start: number, end: number) =>
  sql(
    `insert into usage_entries (workspace_id, resource_id, source_id, kind, plan, quantity, started_at, ended_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [owner.workspaceId, resourceId, `src-${Math.random()}`, kind, plan, quantity, new Date(start), new Date(end)],
  );

beforeAll(async () => {
  server = await bootServer({ SLIPWAY_USAGE_INTERVAL_SECONDS: '0.2' });
  api = client(server.url);
  owner = await signUp(api);
}, 60_000);
afterAll(() => server?.close());

/** Every figure of every resource, for comparing two reports. */
async function figures(period: string) {
  const body = (await api.get(`/v1/usage${period}`, owner)).body;
  return Object.fromEntries(
    body.resources.map((r: any) => [
      r.resourceId,
      { ...r.instanceHoursByPlan, ...r.datastoreHoursByPlan, build: r.buildMinutes, bytes: r.bandwidthBytes },
    ]),
  ) as Record<string, Record<string, number>>;
}
function expectSame(a: Record<string, Record<string, number>>, b: Record<string, Record<string, number>>) {
  expect(Object.keys(b).sort()).toEqual(Object.keys(a).sort());
  for (const [id, f] of Object.entries(a)) {
    expect(Object.keys(b[id]!).sort()).toEqual(Object.keys(f).sort());
    for (const [k, v] of Object.entries(f)) expect(b[id]![k], `${id} ${k}`).toBeCloseTo(v, 9);
  }
}

describe('the hourly roll-up', () => {
  it('gives the raw ledger figures, on the hour or not, before and after rolling up, and with new entries', async () => {
    const now = Date.now();
    const hourStart = Math.floor(now / HOUR) * HOUR;
    // A minute-by-minute instance over the last 6 h, a 5-hour stretch across hours, a datastore, a build, bandwidth,
    // and a zero-length closing entry.
    for (let t = hourStart - 6 * HOUR; t < hourStart - 60_000; t += 60_000)
      await entry('srv-roll-a', 'instance_seconds', 'starter', 60, t, t + 60_000);
    await entry(
      'srv-roll-b',
      'instance_seconds',
      'pro',
      5 * 3600,
      hourStart - 6.5 * HOUR + 17_000,
      hourStart - 1.5 * HOUR + 17_000,
    );
    await entry(
      'dpg-roll',
      'datastore_seconds',
      'basic_1gb',
      2 * 3600,
      hourStart - 3.25 * HOUR,
      hourStart - 1.25 * HOUR,
    );
    await entry(
      'srv-roll-a',
      'build_seconds',
      'starter',
      90,
      hourStart - 2 * HOUR - 45_000,
      hourStart - 2 * HOUR + 45_000,
    );
    await entry('srv-roll-a', 'bandwidth_bytes', 'starter', 7e9, hourStart - 4.5 * HOUR, hourStart - 0.5 * HOUR);
    await entry('srv-roll-b', 'instance_seconds', 'pro', 0, hourStart - HOUR, hourStart - HOUR);
    // A stretch over three days (a datastore, or an instance through a Slipway downtime).
    await entry(
      'red-roll',
      'datastore_seconds',
      'starter',
      70 * 3600,
      hourStart - 80 * HOUR - 600_000,
      hourStart - 10 * HOUR - 600_000,
    );

    const periods = [
      `?startTime=${new Date(hourStart - 100.2 * HOUR).toISOString()}&endTime=${new Date(now).toISOString()}`,
      `?startTime=${new Date(hourStart - 7 * HOUR).toISOString()}&endTime=${new Date(hourStart).toISOString()}`,
      `?startTime=${new Date(hourStart - 5.3 * HOUR).toISOString()}&endTime=${new Date(hourStart - 1.1 * HOUR).toISOString()}`,
      `?startTime=${new Date(hourStart - 2.4 * HOUR).toISOString()}&endTime=${new Date(hourStart - 2.1 * HOUR).toISOString()}`,
    ];
    const raw = await Promise.all(periods.map(figures));
    expect(raw[1]!['srv-roll-a']!.starter).toBeCloseTo(6 - 1 / 60, 9);
    expect(raw[0]!['red-roll']!.starter).toBeCloseTo(70, 9);

    // Nothing was rolled up yet (entries younger than a minute wait); make them old enough and let the meter roll.
    const rolled = async () =>
      (await sql('select count(*)::int as n from usage_hourly where workspace_id = $1', [owner.workspaceId])).rows[0]!
        .n;
    expect(await rolled()).toBe(0);
    await sql(`update usage_entries set created_at = now() - interval '5 minutes' where workspace_id = $1`, [
      owner.workspaceId,
    ]);
    const maxId = Number((await sql('select max(id) as id from usage_entries')).rows[0]!.id);
    await waitFor(
      'the roll-up to pass every entry',
      async () =>
        Number((await sql(`select last_id from usage_rollups where name = 'hourly'`)).rows[0]?.last_id ?? 0) >= maxId,
      20_000,
    );
    expect(await rolled()).toBeGreaterThan(70); // a row per resource, kind, plan and hour
    const days = await sql('select count(*)::int as n from usage_daily where workspace_id = $1', [owner.workspaceId]);
    expect(days.rows[0]!.n).toBeGreaterThanOrEqual(8);
    for (const [i, period] of periods.entries()) expectSame(raw[i]!, await figures(period));

    // An entry after the roll-up counts too, once.
    await entry(
      'srv-roll-c',
      'instance_seconds',
      'standard',
      1800,
      hourStart - 3 * HOUR - 900_000,
      hourStart - 3 * HOUR + 900_000,
    );
    const after = await figures(periods[1]!);
    expect(after['srv-roll-c']!.standard).toBeCloseTo(0.5, 9);
    expectSame(raw[1]!, Object.fromEntries(Object.entries(after).filter(([id]) => id !== 'srv-roll-c')));
  }, 60_000);
});
