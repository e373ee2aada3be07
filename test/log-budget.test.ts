/** The per-service log budget (token bucket, drop reports) and the line splitter's budgeted reads. */
import { describe, expect, it } from 'vitest';
import { createLogBudget, dropNotice, type DropReport } from '../src/observability/logs/budget.js';
import { createLineSplitter } from '../src/observability/logs/lines.js';

const source = { serviceId: 'srv-a', workspaceId: 'tea-a', instanceId: 'srv-a-i', deployId: 'dep-a' };

function budgetAt(start = 1_000_000) {
  const clock = { now: start };
  const reports: DropReport[] = [];
  const budget = createLogBudget({
    ratePerSec: 100,
    burst: 500,
    reportMs: 5000,
    onReport: (r) => reports.push(r),
    now: () => clock.now,
  });
  return { clock, reports, budget };
}

describe('log budget', () => {
  it('grants the burst at once, then the rate, per service', () => {
    const { clock, budget } = budgetAt();
    expect(budget.available('srv-a')).toBe(500);
    budget.spend('srv-a', 500);
    expect(budget.available('srv-a')).toBe(0);
    expect(budget.available('srv-b')).toBe(500); // another service has its own
    clock.now += 250;
    expect(budget.available('srv-a')).toBe(25);
    clock.now += 60_000;
    expect(budget.available('srv-a')).toBe(500); // never more than the burst
  });

  it('reports drops once per interval per service, with the count, and says when it is an estimate', () => {
    const { clock, reports, budget } = budgetAt();
    budget.drop(source, 1000, 50_000);
    budget.reportDue();
    expect(reports).toEqual([]); // not before the interval is over
    clock.now += 2000;
    budget.drop(source, 500, 25_000, true);
    expect(budget.dropping('srv-a', 1000)).toBe(true);
    clock.now += 3000;
    budget.reportDue();
    expect(reports).toEqual([
      {
        ...source,
        droppedLines: 1500,
        droppedBytes: 75_000,
        estimated: true,
        seconds: 5,
        limitLinesPerSecond: 100,
        burstLines: 500,
      },
    ]);
    expect(dropNotice(reports[0]!)).toBe(
      'slipway: dropped about 1500 log lines over the last 5 s (limit 100 lines/s, burst 500)',
    );
    budget.drop(source, 7, 70);
    clock.now += 1000;
    budget.reportDue();
    expect(reports).toHaveLength(1); // the next window began with these drops
    budget.reportDue(true); // shutdown: what is pending goes out now
    expect(reports[1]).toMatchObject({ droppedLines: 7, estimated: false });
    expect(dropNotice(reports[1]!)).toMatch(/^slipway: dropped 7 log lines over the last 1 s/);
    expect(budget.dropping('srv-a', 1000)).toBe(false);
  });
});

describe('line splitter within a budget', () => {
  const lines = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `line ${from + i}\n`).join('');

  it('keeps the first lines, counts the rest without decoding them, and resumes after them', () => {
    const splitter = createLineSplitter();
    const chunk = Buffer.from(lines(10) + 'partial');
    const taken = splitter.take(chunk, 3, true);
    expect(taken.lines).toEqual(['line 0', 'line 1', 'line 2']);
    expect(taken.dropped).toBe(7);
    expect(taken.droppedBytes).toBe(Buffer.byteLength(lines(7, 3)));
    expect(splitter.consumed).toBe(Buffer.byteLength(lines(10)));
    expect(splitter.position).toBe(chunk.length); // the partial line is held
    expect(splitter.take(Buffer.from(' end\n'), 1, true).lines).toEqual(['partial end']);
  });

  it('stops at the cap without dropping when the budget is not the limit', () => {
    const splitter = createLineSplitter();
    const taken = splitter.take(Buffer.from(lines(10)), 4, false);
    expect(taken.lines).toHaveLength(4);
    expect(taken.dropped).toBe(0);
    expect(splitter.position).toBe(Buffer.byteLength(lines(4))); // the next read starts at line 4
  });

  it('drops a long line held across reads whole, and skips to an offset forgetting the partial line', () => {
    const splitter = createLineSplitter();
    splitter.take(Buffer.from('x'.repeat(100)), 0, true);
    const taken = splitter.take(Buffer.from('yyy\nnext\n'), 0, true);
    expect(taken).toMatchObject({ lines: [], dropped: 2, droppedBytes: 104 + 5 });
    splitter.take(Buffer.from('half a li'), 1, true);
    splitter.skipTo(1000);
    expect(splitter.position).toBe(1000);
    expect(splitter.take(Buffer.from('fresh\n'), 1, true).lines).toEqual(['fresh']);
    expect(splitter.consumed).toBe(1006);
  });
});
