import { describe, expect, it } from 'vitest';
import { createFairSlots, createTurns, type Release } from '../src/lib/fair-slots.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('fair slots (builds and git polls)', () => {
  it("serves waiting workspaces in turn: one workspace's backlog does not delay another's work", async () => {
    const slots = createFairSlots({ slots: 2, perKey: 2 });
    const order: string[] = [];
    const take = (key: string, name: string) =>
      slots.acquire(key).then((release) => {
        order.push(name);
        return release;
      });
    const a1 = await take('a', 'a1');
    const a2 = await take('a', 'a2');
    const waiting = [take('a', 'a3'), take('a', 'a4'), take('a', 'a5'), take('b', 'b1')];
    await tick();
    expect(order).toEqual(['a1', 'a2']);
    expect(slots.waiting('a')).toBe(3);
    a1();
    await tick();
    a2();
    await tick();
    // a3 came first, then b1 took the next turn although a4 and a5 waited longer.
    expect(order).toEqual(['a1', 'a2', 'a3', 'b1']);
    for (const p of waiting) void p.then((r) => r());
    await tick();
    await tick();
    await tick();
    expect(order).toEqual(['a1', 'a2', 'a3', 'b1', 'a4', 'a5']);
  });

  it('holds each key to its share, and to the weight (memory) budget, but lets one piece of work run alone', async () => {
    const slots = createFairSlots({ slots: 3, perKey: 1, capacity: 4096 });
    const a = await slots.acquire('a', { weight: 2048 });
    let a2: Release | undefined;
    void slots.acquire('a', { weight: 2048 }).then((r) => (a2 = r));
    const b = await slots.acquire('b', { weight: 2048 });
    let c: Release | undefined;
    let waited = false;
    void slots.acquire('c', { weight: 2048, onWait: () => (waited = true) }).then((r) => (c = r));
    await tick();
    expect([a2, c, waited]).toEqual([undefined, undefined, true]); // a's share is 1; c is over the memory budget
    b();
    await tick();
    expect(c).toBeDefined();
    expect(a2).toBeUndefined();
    a();
    c!();
    await tick();
    expect(a2).toBeDefined();
    a2!();
    const huge = await slots.acquire('d', { weight: 10_000 }); // alone: allowed
    expect(slots.running()).toBe(1);
    huge();
  });

  it('drops a waiter whose signal aborts, and serves the next', async () => {
    const slots = createFairSlots({ slots: 1, perKey: 1 });
    const first = await slots.acquire('a');
    const abort = new AbortController();
    const canceled = slots.acquire('b', { signal: abort.signal });
    const next = slots.acquire('c');
    abort.abort();
    await expect(canceled).rejects.toThrow(/canceled/);
    first();
    (await next)();
    expect([slots.running(), slots.waiting()]).toEqual([0, 0]);
  });
});

describe('turns (log scans and metrics queries per workspace)', () => {
  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    return { open, opened };
  };
  const busy = () => new Error('busy');

  it("lets a workspace's burst wait behind itself, refuses it past its waiting, and runs another workspace beside it", async () => {
    const turns = createTurns({ slots: 2, perKey: 1, maxWaiting: 2, waitMs: 10_000, busy });
    const started: string[] = [];
    const first = gate();
    const run = (key: string, name: string, until: Promise<void> = Promise.resolve()) =>
      turns(key, async () => {
        started.push(name);
        await until;
        return name;
      });
    const a1 = run('a', 'a1', first.opened);
    const a2 = run('a', 'a2');
    const a3 = run('a', 'a3');
    await expect(run('a', 'a4')).rejects.toThrow('busy'); // two already wait
    expect(await run('b', 'b1')).toBe('b1'); // not behind a's queue
    expect(started).toEqual(['a1', 'b1']);
    first.open();
    expect(await Promise.all([a1, a2, a3])).toEqual(['a1', 'a2', 'a3']);
  });

  it('refuses a query that waited its whole wait', async () => {
    const turns = createTurns({ slots: 1, perKey: 1, maxWaiting: 4, waitMs: 50, busy });
    const held = gate();
    const long = turns('a', () => held.opened);
    await expect(turns('b', async () => 'b')).rejects.toThrow('busy');
    held.open();
    await long;
    expect(await turns('b', async () => 'b')).toBe('b');
  });
});
