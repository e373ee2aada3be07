import type { Config } from './config.js';
import { createBilling } from '../core/billing/billing.js';
import type { PriceCatalog } from '../core/billing/catalog.js';
import { createMeterReports } from '../core/billing/meter-reports.js';
import { createSubscriptions } from '../core/billing/subscriptions.js';
import { createStripeProvider } from '../integrations/stripe.js';
import type { Logger } from '../lib/logger.js';
import type { UsageReports } from '../observability/usage/report.js';
import type { Repos, Transact } from '../store/repos/index.js';

/** Billing as the configuration gives it: the estimate always; with SLIPWAY_STRIPE_SECRET_KEY, Stripe and its meter. */
export function wireBilling(deps: {
  config: Config;
  catalog: PriceCatalog;
  usage: UsageReports;
  repos: Pick<Repos, 'billing' | 'workspaces'>;
  transact: Transact;
  log: Logger;
}) {
  const { stripe } = deps.config;
  const base = {
    usage: deps.usage,
    repo: deps.repos.billing,
    catalog: deps.catalog,
    blockLapsed: stripe.blockLapsed,
    log: deps.log,
  };
  if (!stripe.secretKey) return { billing: createBilling(base), meter: undefined };
  const provider = createStripeProvider({
    secretKey: stripe.secretKey,
    apiUrl: stripe.apiUrl,
    webhookSecret: stripe.webhookSecret,
  });
  const subscriptions = createSubscriptions({
    provider,
    repo: deps.repos.billing,
    transact: deps.transact,
    workspaceName: async (id) => (await deps.repos.workspaces.get(id))?.name ?? id,
    meteredPrice: stripe.meteredPrice,
    webhookConfigured: !!stripe.webhookSecret,
  });
  const billing = createBilling({ ...base, subscriptions });
  const meter = createMeterReports({
    repo: deps.repos.billing,
    provider,
    costOf: billing.costOf,
    eventName: stripe.meterEvent,
    intervalMs: stripe.meterIntervalMs,
    log: deps.log,
  });
  return { billing, meter };
}
