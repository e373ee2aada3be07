import type { AppUrls } from '../../core/service-state/env.js';
import { createLayout } from '../../core/service-state/layout.js';
import { createLifecycle } from '../../core/service-state/lifecycle.js';
import { createEvents } from '../../core/events.js';
import { createLogs } from '../../observability/logs/index.js';
import { createRouteTable } from '../../router/route-table.js';
import { wireNotifications } from '../wire-notifications.js';
import { wireWebhooks } from '../wire-webhooks.js';
import type { Foundation } from './foundation.js';

/**
 * What most later steps share: the route table, the services' lifecycle, the apps' URLs, events (and the webhook
 * outbox they feed), the data dir's layout and the logs.
 */
export function wireShared({ config, repos, box, store, log }: Foundation) {
  const routeTable = createRouteTable(config.appsDomain);
  const lifecycle = createLifecycle();
  // The router's port, once it listens (startTraffic): a port picked free is known only then.
  const routerAddress = { port: config.routerPort };
  const urls: AppUrls = {
    externalHostname: (slug) => `${slug}.${config.appsDomain}`,
    externalUrl: (slug) => `http://${slug}.${config.appsDomain}:${routerAddress.port}`,
    dashboardUrl: (id) => `${config.publicUrl}/services/${id}`,
  };
  // Recording an event queues its webhook deliveries and notifications (the outbox) and wakes their dispatchers
  // (startBackground).
  const hooks = wireWebhooks({ config, repos, box });
  const notifications = wireNotifications({ config, repos, box, dashboardUrl: urls.dashboardUrl });
  const events = createEvents(
    repos.events,
    () => {
      hooks.poke();
      notifications.poke();
    },
    { emailConfigured: notifications.emailConfigured },
  );
  const layout = createLayout(config.dataDir);
  const logs = createLogs({
    repo: repos.logs,
    instances: () => repos.logs.tailable(),
    instanceDir: layout.instanceDir,
    shared: store.kind === 'postgres',
    log,
    workspaceOf: async (id) => (await repos.services.get(id))?.workspaceId,
    settings: {
      pollMs: config.logPollMs,
      flushMs: 5,
      streamBufferBytes: config.logStreamBufferBytes,
      pingMs: 30_000,
      queryBudget: { ms: config.logQueryMs, bytes: config.logQueryBytes },
      rateLines: config.logRateLines,
      burstLines: config.logBurstLines,
      requestRateLines: config.requestLogRateLines,
      requestBurstLines: config.requestLogBurstLines,
    },
    onLinesDropped: ({ workspaceId, serviceId, instanceId, deployId, ...counts }) =>
      events.record({
        workspaceId,
        serviceId,
        deployId: deployId ?? undefined,
        type: 'log_lines_dropped',
        details: { serviceId, instanceId, ...counts },
      }),
  });
  return { routeTable, lifecycle, routerAddress, urls, hooks, notifications, events, layout, logs };
}
export type Shared = ReturnType<typeof wireShared>;
