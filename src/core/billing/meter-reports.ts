import type { BillingProvider } from '../../integrations/stripe.js';
import type { Logger } from '../../lib/logger.js';
import type { BillingRepo } from '../../store/repos/billing.js';
import type { CostEstimate } from './estimate.js';

/** The UTC calendar month before the one `now` is in: the last closed billing period. */
export function lastClosedPeriod(now: Date) {
  return {
    start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)),
    end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
  };
}

const BATCH = 100;
/** A period is planned an hour after it closed: the meter's last stretches and ended builds are in the ledger by then. */
const GRACE_MS = 3600_000;

/**
 * Reports each closed period's cost to Stripe's meter, once per workspace, period and resource (docs/billing.md, "Billing (Stripe)").
 * First the period's amounts are written as rows, all in one statement; then each row is sent with its own identifier
 * (and the same idempotency key), and marked sent. A crash between the two resends the row with the same identifier,
 * which Stripe counts once: nothing is billed twice, and nothing is left out.
 */
export function createMeterReports(deps: {
  repo: Pick<BillingRepo, 'account' | 'unreported' | 'addReports' | 'pending' | 'markSent'>;
  provider: BillingProvider;
  /** The cost of a closed period, from the same figures GET /v1/usage gives for it. */
  costOf: (workspaceId: string, period: { start: Date; end: Date }) => Promise<CostEstimate>;
  eventName: string;
  intervalMs: number;
  log: Logger;
}) {
  const { repo, provider } = deps;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function plan(now: Date) {
    const period = lastClosedPeriod(now);
    if (now.getTime() - period.end.getTime() < GRACE_MS) return;
    const month = period.start.toISOString().slice(0, 7);
    for (const account of await repo.unreported(period.start)) {
      const cost = await deps.costOf(account.workspaceId, period);
      const items = [
        ...cost.resources.map((r) => ({ key: r.resourceId, value: r.amount })),
        ...cost.lineItems.map((l) => ({ key: l.item, value: l.amount })),
      ];
      await repo.addReports(
        items.map(({ key, value }) => ({
          workspaceId: account.workspaceId,
          periodStart: period.start,
          resourceKey: key,
          identifier: `slw_${account.workspaceId}_${month}_${key}`.slice(0, 100),
          value,
          status: value > 0 ? ('pending' as const) : ('zero' as const),
        })),
      );
    }
  }

  /**
   * Sends every pending report once per pass, a page at a time. A report Stripe refuses (a deleted customer, say) is
   * logged and stays pending for the next pass: it never holds back another workspace's.
   */
  async function send() {
    let after = '';
    for (;;) {
      const rows = await repo.pending(BATCH, after);
      for (const row of rows) {
        after = row.identifier;
        const account = await repo.account(row.workspaceId);
        if (!account) continue; // the workspace is gone (its rows go with it)
        const s = row.periodStart;
        try {
          await provider.meterEvent({
            eventName: deps.eventName,
            customerId: account.customerId,
            value: row.value,
            identifier: row.identifier,
            // The period's last second: the usage belongs to it, not to the day it is reported.
            timestamp: Date.UTC(s.getUTCFullYear(), s.getUTCMonth() + 1, 1) / 1000 - 1,
          });
        } catch (err) {
          deps.log.warn(
            { err, identifier: row.identifier },
            'Stripe refused a usage report; the next pass tries again',
          );
          continue;
        }
        await repo.markSent(row.identifier);
      }
      if (rows.length < BATCH) return;
    }
  }

  /** One pass: plan the last closed period, then send what is pending (this pass's and any a crash left). */
  function tick(now = new Date()): Promise<void> {
    running ??= (async () => {
      try {
        await plan(now);
        await send();
      } catch (err) {
        deps.log.warn({ err }, 'usage could not be reported to Stripe; the next pass tries again');
      } finally {
        running = undefined;
      }
    })();
    return running;
  }

  return {
    tick,
    start() {
      void tick();
      timer = setInterval(() => void tick(), deps.intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
